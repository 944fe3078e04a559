// The world split into two strided teams, the even PEs (0, 2, ...) and the odd ones: teams of 1
// and 1 PEs at 2 PEs, 2 and 1 at 3, 2 and 2 at 4. Both splits are collective over the world; each
// PE then uses the one it belongs to (mine()), so the two teams work at the same time. Used by the
// team and collectives suites.
#pragma once

#include "device_harness.hpp"

namespace mori::test {

struct Halves {
  Halves() {
    const int n = shmem::n_pes();
    REQUIRE_MESSAGE(
        shmem::team_split_strided(shmem::kTeamWorld, 0, 2, (n + 1) / 2, nullptr, 0, &evens) == 0,
        shmem::last_error());
    REQUIRE_MESSAGE(
        shmem::team_split_strided(shmem::kTeamWorld, 1, 2, n / 2, nullptr, 0, &odds) == 0,
        shmem::last_error());
  }
  ~Halves() {
    CHECK(shmem::team_destroy(evens) == 0);
    CHECK(shmem::team_destroy(odds) == 0);
  }
  Halves(const Halves&) = delete;
  Halves& operator=(const Halves&) = delete;
  shmem::Team mine() const { return shmem::my_pe() % 2 == 0 ? evens : odds; }
  shmem::Team evens = shmem::kTeamInvalid, odds = shmem::kTeamInvalid;
};

}  // namespace mori::test
