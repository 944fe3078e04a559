// A unique ID made by a process that has since exited: its listener is gone, so whoever uses the ID
// must bind the port itself or find nobody listening.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "bootstrap/bootstrap.hpp"
#include "fork_children.hpp"

namespace mori::test {

inline shmem::UniqueId unique_id_from_exited_process() {
  ChildRun maker = run_ranks(1, [](int) -> std::string {
    shmem::UniqueId id;
    if (!bootstrap::new_unique_id(&id).ok()) return "";
    return std::string(reinterpret_cast<const char*>(id.bytes), sizeof(id.bytes));
  });
  REQUIRE(maker.children.size() == 1);
  REQUIRE(maker.children[0].text.size() == sizeof(shmem::UniqueId));
  shmem::UniqueId id;
  std::memcpy(id.bytes, maker.children[0].text.data(), sizeof(id.bytes));
  return id;
}

}  // namespace mori::test
