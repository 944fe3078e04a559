// Helpers for the fault matrix (docs/troubleshooting.md): PEs as forked processes joined by a
// unique ID, environment set for one case, and the texts the library prints, built the way it
// prints them.
#pragma once

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "fork/fork_children.hpp"
#include "mori/shmem.hpp"

namespace mori::test {

using Clock = std::chrono::steady_clock;

// Milliseconds since `start`.
inline long long ms_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// Sets environment variables for the life of a scope (and so for the children forked in it), then
// puts back what was there.
class CaseEnv {
 public:
  CaseEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.push_back({name, old ? old : "", old != nullptr});
      if (value)
        setenv(name, value, 1);
      else
        unsetenv(name);
    }
  }
  ~CaseEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had)
        setenv(it->name, it->value.c_str(), 1);
      else
        unsetenv(it->name);
    }
  }
  CaseEnv(const CaseEnv&) = delete;
  CaseEnv& operator=(const CaseEnv&) = delete;

 private:
  struct Saved {
    const char* name;
    std::string value;
    bool had;
  };
  std::vector<Saved> saved_;
};

inline shmem::UniqueId new_id() {
  shmem::UniqueId id;
  REQUIRE(shmem::get_unique_id(&id) == 0);
  return id;
}

inline int init_uid(const shmem::UniqueId& id, int rank, int n) {
  shmem::InitAttr attr;
  attr.rank = rank;
  attr.n_ranks = n;
  attr.uid = id;
  return shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr);
}

// An address as device messages print it.
inline std::string hex_text(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
  return text;
}

// What host::launch returns when the one lane of a {1} x {1} launch traps with `message`.
inline std::string lane_failure(const std::string& message) {
  return "mori::host::launch: lane failed: " + message + " [block (0,0,0) thread (0,0,0)]";
}

// Inside a child: returns from the body with a reason when `cond` fails ("" is success).
#define FAULT_CHECK(cond)                                                                      \
  do {                                                                                         \
    if (!(cond))                                                                               \
      return "rank " + std::to_string(rank) + ": " #cond " failed (last_error: \"" +           \
             std::string(mori::shmem::last_error()) + "\", line " + std::to_string(__LINE__) + \
             ")";                                                                              \
  } while (0)

// Inside a child: `got` must equal `want`, else the body returns both.
#define FAULT_EQ(got, want)                                                                       \
  do {                                                                                            \
    const std::string got_ = (got), want_ = (want);                                               \
    if (got_ != want_)                                                                            \
      return "rank " + std::to_string(rank) + ", line " + std::to_string(__LINE__) + ": got \"" + \
             got_ + "\", want \"" + want_ + "\"";                                                 \
  } while (0)

}  // namespace mori::test
