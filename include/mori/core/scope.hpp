// Scope tags: who cooperates in a call. A scope is a type parameter (put<Warp>(...)), never part of
// a name.
//
//   Thread: the calling thread alone.
//   Warp:   every live lane of the calling warp; all of them make the same call with the same
//           arguments.
//   Block:  every thread of the calling block; likewise.
//
// Each tag gives the caller's rank within the scope, the scope's size, a barrier over the scope,
// and a leader (rank 0), which is the one participant that posts work on behalf of the scope where
// only one may.
#pragma once

#include <concepts>

#include "mori/platform.hpp"

namespace mori {

struct Thread {
  static constexpr const char* kName = "thread";
  MORI_DEVICE static int rank() { return 0; }
  MORI_DEVICE static int size() { return 1; }
  MORI_DEVICE static void sync() {}
  MORI_DEVICE static bool leader() { return true; }
};

struct Warp {
  static constexpr const char* kName = "warp";
  MORI_DEVICE static int rank() { return platform::lane_id(); }
  MORI_DEVICE static int size() { return platform::warp_lanes(); }
  MORI_DEVICE static void sync() { platform::warp_sync(); }
  MORI_DEVICE static bool leader() { return rank() == 0; }
};

struct Block {
  static constexpr const char* kName = "block";
  MORI_DEVICE static int rank() { return platform::thread_rank(); }
  MORI_DEVICE static int size() { return platform::block_threads(); }
  MORI_DEVICE static void sync() { platform::block_sync(); }
  MORI_DEVICE static bool leader() { return rank() == 0; }
};

template <typename S>
concept Scope = std::same_as<S, Thread> || std::same_as<S, Warp> || std::same_as<S, Block>;

// Calls f.template operator()<S>() for S = Thread, Warp, Block, in that order: the one sweep for
// code that instantiates or tests every scope (device code on the GPU; any code on the host
// backend).
template <typename F>
MORI_DEVICE void for_each_scope(F&& f) {
  f.template operator()<Thread>();
  f.template operator()<Warp>();
  f.template operator()<Block>();
}

}  // namespace mori
