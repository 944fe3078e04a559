// What a forked PE of the unique-ID tests needs besides fork_children.hpp's PE_CHECK: its
// InitAttr.
#pragma once

#include <string>

#include "mori/shmem.hpp"

namespace mori::test {

inline shmem::InitAttr attr_for(const shmem::UniqueId& id, int rank, int n) {
  shmem::InitAttr attr;
  attr.rank = rank;
  attr.n_ranks = n;
  attr.uid = id;
  return attr;
}

}  // namespace mori::test
