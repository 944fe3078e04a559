// split_over_tcp: Bootstrap::split over any bootstrap, as new TCP bootstraps, one per group, whose
// unique IDs travel over the parent.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"

namespace mori::bootstrap {

Status split_over_tcp(Bootstrap& parent, int color, int key, std::chrono::milliseconds timeout,
                      std::unique_ptr<Bootstrap>* out) {
  out->reset();
  struct Member {
    int32_t color, key;
  };
  const int n = parent.size(), me = parent.rank();
  const Member mine{color, key};
  std::vector<Member> all(n);
  MORI_TRY(parent.allgather(&mine, all.data(), sizeof mine));
  std::vector<int> group;  // parent ranks of this rank's group, in the new order
  for (int r = 0; color >= 0 && r < n; ++r)
    if (all[r].color == color) group.push_back(r);
  std::stable_sort(group.begin(), group.end(),
                   [&](int a, int b) { return all[a].key < all[b].key; });

  // Every rank offers an ID, made only by the first rank of a group of two or more. A failure to
  // make one travels with it, so that its group fails together and the other groups go on.
  struct Offer {
    shmem::UniqueId id;
    int32_t made;
  };
  Offer offer{};
  Status made;
  if (group.size() > 1 && group.front() == me) {
    made = new_unique_id(&offer.id);
    offer.made = made.ok();
  }
  std::vector<Offer> offers(n);
  MORI_TRY(parent.allgather(&offer, offers.data(), sizeof offer));
  if (color < 0) return {};
  if (group.size() == 1) {
    *out = make_solo_bootstrap();
    return {};
  }
  MORI_TRY(made);
  if (!offers[group.front()].made) {
    return Status::error("bootstrap: split: rank " + std::to_string(group.front()) +
                         " could not make the new group's unique ID");
  }
  const int new_rank = static_cast<int>(std::find(group.begin(), group.end(), me) - group.begin());
  return make_tcp_bootstrap(offers[group.front()].id, new_rank, static_cast<int>(group.size()),
                            timeout, out);
}

}  // namespace mori::bootstrap
