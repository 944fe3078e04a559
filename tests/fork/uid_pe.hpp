// What a forked PE of the unique-ID tests needs: its InitAttr, and a check that fails the child
// (run_children's body returns the text) naming the condition and the last error.
#pragma once

#include <string>

#include "mori/shmem.hpp"

// Fails the child with a message naming the check; needs `rank` in scope.
#define PE_CHECK(cond)                                                          \
  do {                                                                          \
    if (!(cond))                                                                \
      return "rank " + std::to_string(rank) +                                   \
             ": " #cond " failed: " + std::string(::mori::shmem::last_error()); \
  } while (0)

namespace mori::test {

inline shmem::InitAttr attr_for(const shmem::UniqueId& id, int rank, int n) {
  shmem::InitAttr attr;
  attr.rank = rank;
  attr.n_ranks = n;
  attr.uid = id;
  return attr;
}

}  // namespace mori::test
