// Every device-side check of the device API fires, with its exact message, and fills the
// device-error record (code, PE, address, message) that the host reads after a failed launch:
// a PE out of range, an address outside the heap and every registered buffer, a size that
// overflows, a strided call's stride below 1, an element range outside a symmetric object, a
// peer's copy that P2P cannot reach, an unreachable PE, and the PEs of other nodes when there are
// no RDMA devices.
//
// Only the local launch fails, so no rank waits for another; all_ranks() after each case keeps the
// ranks in step. The first failure wins the record; each case reads it back with
// shmem::device_error(), which clears it.
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "device_harness.hpp"
#include "runtime/hex.hpp"

namespace state = mori::state;

namespace shmem = mori::shmem;
using namespace mori::test;
using state::DeviceErrorCode;

namespace {

// As the device messages print addresses (core/text.hpp: "0x", lowercase, no leading zeros).
using mori::runtime::hex;
std::string hex(const void* p) { return hex(reinterpret_cast<uint64_t>(p)); }

struct Expected {
  DeviceErrorCode code;
  int pe;
  uint64_t address;
  std::string message;
  std::string kind = "";  // when given, device_error() must read "<kind>: <message>"
};

// Runs `kernel` on one lane, requires that it fails with exactly `e`'s message, checks the record,
// and clears it for the next case.
template <typename F>
void expect_failure(const Expected& e, F&& kernel) {
  CAPTURE(e.message);
  const std::string text = launch_error({1}, {1}, kernel);
  const std::string want =
      "mori::host::launch: lane failed: " + e.message + " [block (0,0,0) thread (0,0,0)]";
  CHECK(text == want);
  state::DeviceError* record = shmem::globalGpuStates.error;
  REQUIRE(record != nullptr);
  CHECK(record->code == static_cast<uint32_t>(e.code));
  CHECK(record->pe == e.pe);
  CHECK(record->address == e.address);
  CHECK(std::string(record->message) == e.message);
  bool ok = text == want && record->code == static_cast<uint32_t>(e.code) && record->pe == e.pe &&
            record->address == e.address && e.message == record->message;
  // The host API's reading of the record: its kind, then the message; reading clears it.
  const std::string read = shmem::device_error();
  CHECK(read.size() > e.message.size());
  CHECK(read.substr(read.size() - e.message.size()) == e.message);
  if (!e.kind.empty()) CHECK(read == e.kind + ": " + e.message);
  CHECK(record->code == 0u);
  CHECK(std::string(shmem::device_error()).empty());
  ok = ok && read.size() > e.message.size() && record->code == 0u;
  REQUIRE(all_ranks(ok));
}

// The symmetric heap as the address messages print it.
std::string heap_text() {
  const state::GpuStates& s = shmem::globalGpuStates;
  return "[" + hex(s.heap_base) + ", +" + std::to_string(s.heap_size) + ")";
}
std::string outside(const char* call, const void* addr, uint64_t bytes, int pe) {
  return std::string(call) + ": address " + hex(addr) + " (" + std::to_string(bytes) +
         " bytes) for PE " + std::to_string(pe) + " is neither in the symmetric heap " +
         heap_text() + " nor in a registered buffer";
}
std::string out_of_range(const char* call, int pe, int n) {
  return std::string(call) + ": PE " + std::to_string(pe) + " is out of range [0, " +
         std::to_string(n) + ")";
}

// A symmetric array of kElems ints, a local source, and a local (not symmetric) buffer.
struct Buffers {
  static constexpr size_t kElems = 16;
  Buffers() {
    heap = static_cast<int*>(shmem::malloc(kElems * sizeof(int)));
    REQUIRE(heap != nullptr);
  }
  ~Buffers() {
    CHECK(shmem::barrier_all() == 0);
    CHECK(shmem::free(heap) == 0);
  }
  int* heap = nullptr;
  std::vector<int> source = std::vector<int>(kElems, 3);
  std::vector<int> local = std::vector<int>(kElems, 0);
};

}  // namespace

TEST_CASE("a PE out of range: put, get, p, g, quiet and fence, in every scope") {
  Session s;
  Buffers b;
  int* d = b.heap;
  const int* src = b.source.data();
  const int n = s.n;
  expect_failure({DeviceErrorCode::kBadPe, 7, 0, out_of_range("put_nbi", 7, n)},
                 [&] { shmem::put_nbi(d, src, 4, 7); });
  expect_failure({DeviceErrorCode::kBadPe, -1, 0, out_of_range("get", -1, n)},
                 [&] { shmem::get(b.local.data(), d, 4, -1); });
  expect_failure({DeviceErrorCode::kBadPe, n, 0, out_of_range("putmem", n, n)},
                 [&] { shmem::putmem(d, src, 8, n); });
  expect_failure({DeviceErrorCode::kBadPe, 7, 0, out_of_range("p", 7, n)},
                 [&] { shmem::p(d, 1, 7); });
  expect_failure({DeviceErrorCode::kBadPe, n, 0, out_of_range("g", n, n)},
                 [&] { (void)shmem::g(d, n); });
  expect_failure({DeviceErrorCode::kBadPe, 7, 0, out_of_range("quiet", 7, n)},
                 [&] { shmem::quiet(7); });
  expect_failure({DeviceErrorCode::kBadPe, -2, 0, out_of_range("fence", -2, n)},
                 [&] { shmem::fence(-2, 1); });

  // Every lane of a warp or a block traps; the first one's record stands, and none of them hangs.
  const std::string message = out_of_range("put_nbi", 7, n);
  auto every_lane = [&]<typename S>() {
    CAPTURE(S::kName);
    const std::string text =
        launch_error({1}, block_for<S>(), [&] { shmem::put_nbi<S>(d, src, 4, 7); });
    CHECK(text.rfind("mori::host::launch: lane failed: " + message + " [block (0,0,0) thread (",
                     0) == 0);
    state::DeviceError* record = shmem::globalGpuStates.error;
    CHECK(record->code == static_cast<uint32_t>(DeviceErrorCode::kBadPe));
    CHECK(std::string(record->message) == message);
    record->code = 0;
    REQUIRE(all_ranks(text.find(message) != std::string::npos));
  };
  every_lane.operator()<mori::Warp>();
  every_lane.operator()<mori::Block>();
}

TEST_CASE("an address neither in the heap nor in a registered buffer") {
  Session s;
  Buffers b;
  const int peer = (s.me + 1) % s.n;
  const int* src = b.source.data();
  int* local = b.local.data();
  const auto a = [](const void* p) { return reinterpret_cast<uint64_t>(p); };
  expect_failure(
      {DeviceErrorCode::kBadAddress, peer, a(local), outside("put_nbi", local, 16, peer)},
      [&] { shmem::put_nbi(local, src, 4, peer); });
  expect_failure({DeviceErrorCode::kBadAddress, peer, a(local), outside("getmem", local, 10, peer)},
                 [&] { shmem::getmem(b.heap, local, 10, peer); });
  expect_failure({DeviceErrorCode::kBadAddress, peer, a(local), outside("p", local, 4, peer)},
                 [&] { shmem::p(local, 9, peer); });
  double x = 0;
  expect_failure({DeviceErrorCode::kBadAddress, peer, a(&x), outside("g", &x, 8, peer)},
                 [&] { (void)shmem::g(&x, peer); });

  // A range that starts inside the heap and runs past its end is named as that, by how much.
  const state::GpuStates& st = shmem::globalGpuStates;
  int* tail = reinterpret_cast<int*>(st.heap_base + st.heap_size - 8);
  expect_failure({DeviceErrorCode::kBadAddress, peer, a(tail),
                  "put: address " + hex(tail) + " (16 bytes) for PE " + std::to_string(peer) +
                      " runs 8 bytes past the end of the symmetric heap " + heap_text(),
                  "address outside symmetric memory"},
                 [&] { shmem::put(tail, src, 4, peer); });

  // Likewise past the end of a registered buffer, with another one registered: the index named is
  // the device table's, which orders buffers by address.
  std::vector<int> first(4), reg(16);
  const int index = first.data() < reg.data() ? 1 : 0;
  REQUIRE(shmem::buffer_register(first.data(), first.size() * sizeof(int)) == 0);
  REQUIRE(shmem::buffer_register(reg.data(), reg.size() * sizeof(int)) == 0);
  int* over = reg.data() + 12;
  expect_failure({DeviceErrorCode::kBadAddress, s.me, a(over),
                  "get_nbi: address " + hex(over) + " (32 bytes) for PE " + std::to_string(s.me) +
                      " runs 16 bytes past the end of registered buffer " + std::to_string(index) +
                      " [" + hex(reg.data()) + ", +64)"},
                 [&] { shmem::get_nbi(local, over, 8, s.me); });
  REQUIRE(shmem::buffer_deregister(reg.data(), reg.size() * sizeof(int)) == 0);
  REQUIRE(shmem::buffer_deregister(first.data(), first.size() * sizeof(int)) == 0);
}

TEST_CASE("a size whose byte count or end address overflows") {
  Session s;
  const int peer = (s.me + 1) % s.n;
  auto* d = static_cast<uint64_t*>(shmem::malloc(64));
  REQUIRE(d != nullptr);
  std::vector<uint64_t> local(8);
  const uint64_t a = reinterpret_cast<uint64_t>(d);
  auto overflow = [&](const char* call, uint64_t nelems) {
    return std::string(call) + ": " + std::to_string(nelems) + " elements of 8 bytes at " + hex(a) +
           " overflow the address space (PE " + std::to_string(peer) + ")";
  };
  // nelems * 8 wraps past 2^64.
  const uint64_t wraps = (uint64_t{1} << 61) + 1;
  expect_failure({DeviceErrorCode::kBadSize, peer, a, overflow("put_nbi", wraps)},
                 [&] { shmem::put_nbi(d, local.data(), wraps, peer); });
  // nelems * 8 fits, but d + nelems * 8 wraps past the end of the address space.
  const uint64_t past_end = (std::numeric_limits<uint64_t>::max() - a) / 8 + 1;
  expect_failure({DeviceErrorCode::kBadSize, peer, a, overflow("get", past_end)},
                 [&] { shmem::get(local.data(), d, past_end, peer); });
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(shmem::free(d) == 0);
}

TEST_CASE("a strided call's stride below 1, or its span overflowing") {
  Session s;
  Buffers b;
  const int peer = (s.me + 1) % s.n;
  int* d = b.heap;
  const int* src = b.source.data();
  auto not_positive = [&](const char* call, const char* name, ptrdiff_t stride) {
    return std::string(call) + ": stride " + name + " = " + std::to_string(stride) +
           " is not positive: strides count elements, 1 or more (PE " + std::to_string(peer) + ")";
  };
  expect_failure({DeviceErrorCode::kBadArgument, peer, 0, not_positive("iput", "dst", 0)},
                 [&] { shmem::iput(d, src, 0, 1, 4, peer); });
  expect_failure({DeviceErrorCode::kBadArgument, peer, 0, not_positive("iput", "sst", -1)},
                 [&] { shmem::iput<32>(d, src, 2, -1, 4, peer); });
  expect_failure({DeviceErrorCode::kBadArgument, peer, 0, not_positive("iget", "dst", -3)},
                 [&] { shmem::iget<mori::Warp>(b.local.data(), d, -3, 2, 0, peer); });
  expect_failure({DeviceErrorCode::kBadArgument, peer, 0, not_positive("iget", "sst", 0)},
                 [&] { shmem::iget<64, mori::Block>(b.local.data(), d, 1, 0, 1, peer); });
  // (nelems - 1) * stride wraps past 2^64, on the remote side and on the local side.
  const uint64_t a = reinterpret_cast<uint64_t>(d);
  const ptrdiff_t huge = ptrdiff_t{1} << 62;
  expect_failure({DeviceErrorCode::kBadSize, peer, a,
                  "iput: 5 elements " + std::to_string(huge) + " apart at " + hex(a) +
                      " overflow the address space (PE " + std::to_string(peer) + ")"},
                 [&] { shmem::iput(d, src, huge, 1, 5, peer); });
  const uint64_t l = reinterpret_cast<uint64_t>(b.local.data());
  expect_failure({DeviceErrorCode::kBadSize, peer, l,
                  "iget: 6 elements " + std::to_string(huge) + " apart at " + hex(l) +
                      " overflow the address space (PE " + std::to_string(peer) + ")"},
                 [&] { shmem::iget(b.local.data(), d, huge, 2, 6, peer); });
}

TEST_CASE("an element range outside a symmetric object") {
  Session s;
  Buffers b;
  const int peer = (s.me + 1) % s.n;
  const shmem::SymmObj<int> obj{b.heap, 10};
  const uint64_t a = reinterpret_cast<uint64_t>(b.heap);
  auto outside_obj = [&](const char* call, size_t offset, size_t nelems) {
    return std::string(call) + ": elements [" + std::to_string(offset) + ", +" +
           std::to_string(nelems) + ") are outside the symmetric object " + hex(a) +
           " of 10 elements (PE " + std::to_string(peer) + ")";
  };
  expect_failure(
      {DeviceErrorCode::kBadSize, peer, a, outside_obj("put", 8, 5), "size out of range"},
      [&] { shmem::put(obj, 8, b.source.data(), 5, peer); });
  expect_failure({DeviceErrorCode::kBadSize, peer, a, outside_obj("get_nbi", 11, 0)},
                 [&] { shmem::get_nbi(b.local.data(), obj, 11, 0, peer); });
  expect_failure({DeviceErrorCode::kBadSize, peer, a, outside_obj("put_nbi", 1, SIZE_MAX)},
                 [&] { shmem::put_nbi(obj, 1, b.source.data(), SIZE_MAX, peer); });
}

TEST_CASE("P2P cannot reach a peer's registered buffer, nor an unreachable PE") {
  // Over RDMA (the mpi.rdma_* runs) a peer's registered buffer is reachable: P2P only.
  if (over_rdma()) return;
  Session s;
  const int peer = (s.me + 1) % s.n;
  std::vector<int> reg(16, 0), src(16, 5);
  REQUIRE(shmem::buffer_register(reg.data(), reg.size() * sizeof(int)) == 0);
  // buffer_register (not _symmetric) leaves each PE's copy private: peers' copies are not mapped.
  const std::string unmapped =
      ": PE " + std::to_string(peer) +
      "'s copy of registered buffer 0 is not mapped into this PE (P2P reaches a registered buffer "
      "only when buffer_register_symmetric registered it)";
  expect_failure({DeviceErrorCode::kNotReachable, peer, 0, "put_nbi" + unmapped},
                 [&] { shmem::put_nbi(reg.data(), src.data(), 4, peer); });
  expect_failure({DeviceErrorCode::kNotReachable, peer, 0, "p" + unmapped},
                 [&] { shmem::p(reg.data() + 1, 1, peer); });
  expect_failure({DeviceErrorCode::kNotReachable, peer, 0, "g" + unmapped},
                 [&] { (void)shmem::g(reg.data() + 1, peer); });
  launch({1}, {1}, [&] { shmem::put(reg.data(), src.data(), 4, s.me); });  // its own copy is
  CHECK(reg[3] == 5);

  // A PE whose transport is kUnreachable (init never chooses it yet): poke the device state, and
  // put it back.
  auto* transports = const_cast<uint8_t*>(shmem::globalGpuStates.transports);
  const uint8_t saved = transports[peer];
  transports[peer] = static_cast<uint8_t>(state::Transport::kUnreachable);
  auto* heap = static_cast<int*>(shmem::malloc(16 * sizeof(int)));
  REQUIRE(heap != nullptr);
  expect_failure(
      {DeviceErrorCode::kNotReachable, peer, 0,
       "put_nbi: PE " + std::to_string(peer) + " is unreachable from PE " + std::to_string(s.me)},
      [&] { shmem::put_nbi(heap, src.data(), 4, peer); });
  // Its P2P mapping is still there: the transport, not the mapping, must refuse it, for data calls
  // and for quiet and fence to that PE, which map nothing.
  const std::pair<const char*, std::function<void()>> calls[] = {
      {"p", [&] { shmem::p(heap + 1, 7, peer); }},
      {"quiet", [&] { shmem::quiet(peer); }},
      {"fence", [&] { shmem::fence(peer); }},
  };
  for (const auto& [call, kernel] : calls) {
    expect_failure({DeviceErrorCode::kNotReachable, peer, 0,
                    std::string(call) + ": PE " + std::to_string(peer) +
                        " is unreachable from PE " + std::to_string(s.me)},
                   kernel);
  }
  transports[peer] = saved;
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(shmem::free(heap) == 0);
  REQUIRE(shmem::buffer_deregister(reg.data(), reg.size() * sizeof(int)) == 0);
}

// A queue pair outside [0, MORI_NUM_QP_PER_PE): negative or one past the last, for a store, an
// atomic and a put. Over RDMA only (the mpi.rdma_* runs): P2P ignores the qp.
TEST_CASE("an RDMA queue pair out of range") {
  if (!over_rdma()) return;
  Session s;
  Buffers b;
  const int peer = (s.me + 1) % s.n;
  const int n = shmem::globalGpuStates.num_qp_per_pe;
  for (const int qp : {-1, n}) {
    const std::string range = ": qp " + std::to_string(qp) + " is out of range [0, " +
                              std::to_string(n) + ") (PE " + std::to_string(peer) +
                              ", MORI_NUM_QP_PER_PE)";
    expect_failure({DeviceErrorCode::kBadArgument, peer, 0, "p" + range},
                   [&] { shmem::p(b.heap + 1, 1, peer, qp); });
    expect_failure({DeviceErrorCode::kBadArgument, peer, 0, "atomic_fetch_add" + range}, [&] {
      (void)shmem::atomic_fetch_add(reinterpret_cast<uint64_t*>(b.heap), uint64_t{1}, peer, qp);
    });
    expect_failure({DeviceErrorCode::kBadArgument, peer, 0, "put_nbi" + range},
                   [&] { shmem::put_nbi(b.heap, b.source.data(), 4, peer, qp); });
  }
}

// An RDMA put or get whose local side has no key: memory neither in the heap nor registered, and
// more bytes than an inline write carries (an inline write needs no key). Over RDMA only; P2P
// copies from any local memory. The record names the local address, not the target.
TEST_CASE("an RDMA put or get from local memory that has no key") {
  if (!over_rdma()) return;
  Session s;
  Buffers b;
  const int peer = (s.me + 1) % s.n;
  const uint64_t bytes = Buffers::kElems * sizeof(int);  // 64: beyond every provider's inline limit
  auto no_key = [&](const char* call, const char* role, const void* local) {
    return std::string(call) + ": local " + role + " " + hex(local) + " (" + std::to_string(bytes) +
           " bytes) has no RDMA key: use heap or buffer_register memory (PE " +
           std::to_string(peer) + ")";
  };
  const int canary = 0x5a5a5a5a;
  b.local.assign(Buffers::kElems, canary);
  expect_failure({DeviceErrorCode::kBadAddress, peer, reinterpret_cast<uint64_t>(b.source.data()),
                  no_key("put_nbi", "source", b.source.data())},
                 [&] { shmem::put_nbi(b.heap, b.source.data(), Buffers::kElems, peer); });
  expect_failure({DeviceErrorCode::kBadAddress, peer, reinterpret_cast<uint64_t>(b.local.data()),
                  no_key("get", "destination", b.local.data())},
                 [&] { shmem::get(b.local.data(), b.heap, Buffers::kElems, peer); });
  // Nothing was fetched into the keyless destination.
  for (const int v : b.local) CHECK(v == canary);
}

// Without RDMA devices (ibv_get_device_list finds none here) the PEs of other nodes are
// unreachable: init says so once per node (ctest mpi.no_rdma_devices checks the line) and the rest
// keeps working over P2P. MORI_SHMEM_PES_PER_NODE splits the ranks into nodes of two (one at np 2);
// MORI_DEVICE_NIC is unset so that RDMA would go to ibverbs devices, not the software NIC.
TEST_CASE("no RDMA devices: other nodes' PEs are unreachable, the node's PEs work over P2P") {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const std::string per_node = std::to_string(n >= 4 ? 2 : 1);
  ScopedEnv nodes("MORI_SHMEM_PES_PER_NODE", per_node.c_str());
  ScopedEnv p2p("MORI_DISABLE_P2P", "0");
  ScopedEnv no_nic("MORI_DEVICE_NIC", nullptr);
  Session s;
  Buffers b;
  int* d = b.heap;
  const int* src = b.source.data();
  const int k = std::stoi(per_node);
  for (int pe = 0; pe < s.n; ++pe) {
    if (pe / k == s.me / k) {
      launch({1}, {1}, [&] { shmem::put(d + 4 * (s.me % k), src, 4, pe); });
    } else {
      expect_failure(
          {DeviceErrorCode::kNotReachable, pe, 0,
           "put_nbi: PE " + std::to_string(pe) + " is unreachable from PE " + std::to_string(s.me)},
          [&] { shmem::put_nbi(d, src, 4, pe); });
      expect_failure(
          {DeviceErrorCode::kNotReachable, pe, 0,
           "g: PE " + std::to_string(pe) + " is unreachable from PE " + std::to_string(s.me)},
          [&] { (void)shmem::g(d, pe); });
    }
  }
  REQUIRE(shmem::barrier_all() == 0);
  bool ok = true;
  for (int w = 0; w < k; ++w)
    for (int i = 0; i < 4; ++i) ok &= d[4 * w + i] == 3;
  CHECK(ok);
  // quiet and fence over every transport skip the unreachable PEs.
  launch({1}, {1}, [&] {
    shmem::quiet();
    shmem::fence();
  });
  REQUIRE(all_ranks(ok));
}
