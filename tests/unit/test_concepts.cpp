// The contracts of the layers as concepts (provider/concepts.hpp, transport/concepts.hpp): every
// provider and transport satisfies its concept, and a provider whose hook is misspelt, or a
// transport that lacks a member, does not, so it cannot compile into the engine or the dispatch.
#include <doctest/doctest.h>

#include <cstdint>

#include "mori/shmem.hpp"

namespace {

namespace provider = mori::provider;
namespace transport = mori::transport;
using provider::CqPoll, provider::WorkRequest, mori::state::RdmaEndpoint;

// Declarations suffice: a concept's requirements are never evaluated.
struct ProviderWithoutHooks {
  static constexpr const char* kName = "fake";
  static constexpr uint32_t kWqeBytes = 64;
  static constexpr uint32_t kMaxInlineBytes = 28;
  static constexpr uint32_t kCqeBytes = 64;
  static constexpr bool kNativeAtomic32 = true;
  static uint64_t sq_bytes(uint32_t wqes);
  template <bool IsRead>
  static void post_read_write(void* wqe, const WorkRequest& wr);
  static void post_inline_write(void* wqe, const WorkRequest& wr);
  static void post_atomic(void* wqe, const WorkRequest& wr);
  static void ring_doorbell(RdmaEndpoint& ep, uint64_t next_index, const void* last_wqe);
  static CqPoll poll_cq(RdmaEndpoint& ep);
  static uint64_t atomic_result(uint64_t raw, uint8_t width);
};
struct ProviderWithHooks : ProviderWithoutHooks {
  static void note_wqe(RdmaEndpoint& ep, const WorkRequest& wr);
  static void prepare_submit(RdmaEndpoint& ep, uint64_t base, uint64_t next);
};
struct ProviderWithMisspeltHook : ProviderWithoutHooks {
  static void note_wqes(RdmaEndpoint& ep, const WorkRequest& wr);  // not note_wqe
  static void prepare_submit(RdmaEndpoint& ep, uint64_t base, uint64_t next);
};
struct ProviderWithWrongHookSignature : ProviderWithoutHooks {
  static void note_wqe(RdmaEndpoint& ep);
  static void prepare_submit(RdmaEndpoint& ep, uint64_t base, uint64_t next);
};

// A transport without fence().
struct TransportWithoutFence {
  static constexpr const char* kName = "fake";
  template <typename S>
  static void put(const char*, const mori::state::RemoteTarget&, const void*, uint64_t);
  template <typename S>
  static void get(const char*, void*, const mori::state::RemoteTarget&, uint64_t);
  template <typename T>
  static void p(const char*, const mori::state::RemoteTarget&, T);
  template <typename T>
  static T g(const char*, const mori::state::RemoteTarget&);
  template <typename T>
  static T amo(const char*, mori::state::atomicType, const mori::state::RemoteTarget&, T, T);
  template <typename S>
  static void put_signal(const char*, const mori::state::RemoteTarget&, const void*, uint64_t,
                         const mori::state::RemoteTarget&, uint64_t, mori::state::atomicType);
  static void quiet(int, int);
};

}  // namespace

TEST_CASE("every provider is a NicProvider, and a misspelt or mistyped hook is not") {
  CHECK(provider::NicProvider<provider::Mlx5>);
  CHECK(provider::NicProvider<provider::Bnxt>);
  CHECK(provider::NicProvider<provider::Ionic>);
  CHECK(provider::NicProvider<ProviderWithHooks>);
  CHECK_FALSE(provider::NicProvider<ProviderWithoutHooks>);
  CHECK_FALSE(provider::NicProvider<ProviderWithMisspeltHook>);
  CHECK_FALSE(provider::NicProvider<ProviderWithWrongHookSignature>);
}

TEST_CASE("every transport is a DeviceTransport, and one without fence is not") {
  CHECK(transport::DeviceTransport<transport::P2p>);
  CHECK(transport::DeviceTransport<transport::Sdma>);
  CHECK(transport::DeviceTransport<transport::Rdma<provider::Mlx5>>);
  CHECK(transport::DeviceTransport<transport::Rdma<provider::Bnxt>>);
  CHECK(transport::DeviceTransport<transport::Rdma<provider::Ionic>>);
  CHECK_FALSE(transport::DeviceTransport<TransportWithoutFence>);
}
