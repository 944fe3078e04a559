// The RDMA transport's place in the dispatch until the IBGDA engine lands: every operation traps
// with a message that says so, naming the call and the PE.
#pragma once

#include "mori/core/scope.hpp"
#include "mori/shmem/address.hpp"
#include "mori/shmem/amo.hpp"
#include "mori/shmem/device_error.hpp"

namespace mori::transport {

using shmem::RemoteTarget;

struct RdmaStub {
  static constexpr const char* kName = "rdma";

  [[noreturn]] MORI_DEVICE static void not_built(const char* call, int pe) {
    shmem::fail({shmem::DeviceErrorCode::kNotBuilt, pe}, [&](shmem::Message& m) {
      m << call << ": RDMA transport not built yet (PE " << pe << " is reached over RDMA)";
    });
  }
  template <Scope S>
  MORI_DEVICE static void put(const char* call, const RemoteTarget& dst, const void*, uint64_t) {
    not_built(call, dst.pe);
  }
  template <Scope S>
  MORI_DEVICE static void get(const char* call, void*, const RemoteTarget& src, uint64_t) {
    not_built(call, src.pe);
  }
  template <typename T>
  MORI_DEVICE static void p(const char* call, const RemoteTarget& dst, T) {
    not_built(call, dst.pe);
  }
  template <typename T>
  MORI_DEVICE static T g(const char* call, const RemoteTarget& src) {
    not_built(call, src.pe);
  }
  template <typename T>
  MORI_DEVICE static T amo(const char* call, shmem::atomicType, const RemoteTarget& dst, T, T) {
    not_built(call, dst.pe);
  }
  template <Scope S>
  MORI_DEVICE static void put_signal(const char* call, const RemoteTarget& dst, const void*,
                                     uint64_t, const RemoteTarget&, uint64_t, shmem::atomicType) {
    not_built(call, dst.pe);
  }
  // Nothing can be outstanding on a transport that posts nothing.
  MORI_DEVICE static void quiet(int, int) {}
  MORI_DEVICE static void fence(int, int) {}
};

}  // namespace mori::transport
