// Bootstrap::split of the TCP bootstrap (split_over_tcp, bootstrap/split.cpp), which teams use
// when mori was initialised from a unique ID: four ranks, played by threads, split into groups
// ordered by key, one group of one, and one rank that joins none; each new group's collectives then
// reach its members only.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.hpp"

using namespace mori::bootstrap;

TEST_CASE("bootstrap split over TCP: groups by color, ranked by key, a rank of none") {
  constexpr int kRanks = 4;
  const std::chrono::milliseconds timeout(5000);
  mori::shmem::UniqueId id{};
  REQUIRE(new_unique_id(&id).ok());
  // Rank r: color r % 2 except rank 3, which joins none; key -r, so each group's order reverses.
  // Group 0 is ranks {2, 0}, group 1 is rank {1} alone.
  std::vector<int> new_rank(kRanks, -2), new_size(kRanks, -2), gathered(kRanks * 2, -2);
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> world, group;
      mori::Status s = make_tcp_bootstrap(id, r, kRanks, timeout, &world);
      if (s.ok()) s = world->split(r == 3 ? -1 : r % 2, -r, timeout, &group);
      if (s.ok() && group) {
        new_rank[r] = group->rank();
        new_size[r] = group->size();
        // Each member's world rank, gathered within the group.
        s = group->allgather(&r, &gathered[r * 2], sizeof r);
      } else if (s.ok()) {
        new_rank[r] = new_size[r] = -1;
      }
      if (!s.ok()) errors[r] = s.message();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) CHECK_MESSAGE(errors[r].empty(), "rank ", r, ": ", errors[r]);
  CHECK(new_rank == std::vector<int>{1, 0, 0, -1});
  CHECK(new_size == std::vector<int>{2, 1, 2, -1});
  CHECK(gathered[0] == 2);  // rank 0's group: new rank 0 is world rank 2
  CHECK(gathered[1] == 0);
  CHECK(gathered[4] == 2);
  CHECK(gathered[5] == 0);
  CHECK(gathered[2] == 1);  // rank 1 alone
}
