// mpi.runtime's registration cases: pe_accessible and addr_accessible over the heap and registered
// buffers, buffer_register's refusals, and buffer_register_symmetric over ext_alloc_shareable
// memory.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "mori/shmem.hpp"
#include "runtime_common.hpp"

namespace shmem = mori::shmem;
using namespace mori::test::runtime;  // NOLINT(google-build-using-namespace): the suite's helpers

TEST_CASE("pe_accessible and addr_accessible: heap and registered addresses, valid PEs only") {
  HeapEnv env("static_heap", "8M");
  REQUIRE(shmem::init() == 0);
  const int n = shmem::n_pes();
  auto* obj = static_cast<char*>(shmem::malloc(4096));
  REQUIRE(obj);
  int on_stack = 0;
  std::vector<char> buf(1 << 12);
  for (int pe = 0; pe < n; ++pe) {
    CHECK(shmem::pe_accessible(pe) == 1);
    CHECK(shmem::addr_accessible(obj, pe) == 1);
    CHECK(shmem::addr_accessible(obj + 4095, pe) == 1);
    CHECK(shmem::addr_accessible(&on_stack, pe) == 0);
    CHECK(shmem::addr_accessible(buf.data(), pe) == 0);
  }
  for (int pe : {-1, n, INT_MAX}) {
    CHECK(shmem::free(&on_stack) != 0);  // leaves an error behind: a 0 answer must clear it
    CHECK(shmem::pe_accessible(pe) == 0);
    CHECK(error() == "");
    CHECK(shmem::free(&on_stack) != 0);
    CHECK(shmem::addr_accessible(obj, pe) == 0);
    CHECK(error() == "");
  }
  REQUIRE(shmem::buffer_register(buf.data(), buf.size()) == 0);
  // Another PE reached over P2P has no mapping of a plain registered buffer (its transfers trap):
  // 0 there, 1 for this PE and for PEs reached over RDMA.
  for (int pe = 0; pe < n; ++pe) {
    const bool p2p = shmem::ptr_p2p(reinterpret_cast<uint64_t>(obj), shmem::my_pe(), pe) != 0;
    CHECK(shmem::addr_accessible(buf.data() + 100, pe) == (pe == shmem::my_pe() || !p2p ? 1 : 0));
  }
  REQUIRE(shmem::buffer_deregister(buf.data(), buf.size()) == 0);
  CHECK(shmem::addr_accessible(buf.data() + 100, 0) == 0);
  CHECK(shmem::free(obj) == 0);
  REQUIRE(shmem::finalize() == 0);
}

TEST_CASE("buffer_register: same size on every PE, overlap and unknown buffers refused") {
  HeapEnv env("static_heap", "8M");
  REQUIRE(shmem::init() == 0);
  std::vector<char> buf(1 << 16);
  CHECK(shmem::buffer_register(buf.data(), buf.size()) == 0);
  CHECK(shmem::ptr_p2p(reinterpret_cast<uint64_t>(buf.data() + 10), shmem::my_pe(),
                       shmem::my_pe()) == reinterpret_cast<uint64_t>(buf.data() + 10));
  CHECK(shmem::buffer_register(buf.data() + 100, 10) != 0);
  CHECK(error().find("overlaps the registered buffer") != std::string::npos);
  CHECK(shmem::buffer_register(nullptr, 10) != 0);
  CHECK(error() == "buffer_register: ptr is null");
  std::vector<char> other(shmem::my_pe() == 0 ? 100 : 200);
  CHECK(shmem::buffer_register(other.data(), other.size()) != 0);
  CHECK(error().find("every PE registers the same size") != std::string::npos);
  CHECK(shmem::buffer_deregister(buf.data(), 5) != 0);
  CHECK(error().find("was registered with 65536 bytes, not 5") != std::string::npos);
  CHECK(shmem::buffer_deregister(buf.data(), buf.size()) == 0);
  CHECK(shmem::buffer_deregister(buf.data(), buf.size()) != 0);
  CHECK(error().find("is not a registered buffer") != std::string::npos);
  REQUIRE(shmem::finalize() == 0);
}

TEST_CASE(
    "buffer_register_symmetric: only ext_alloc_shareable memory, refused on every PE, nothing "
    "lost") {
  HeapEnv env("static_heap", "8M");
  REQUIRE(shmem::init() == 0);
  const int me = shmem::my_pe(), n = shmem::n_pes();
  CHECK(shmem::ext_alloc_shareable(0) == nullptr);
  CHECK(error() == "ext_alloc_shareable: size is 0");
  CHECK(shmem::ext_free_shareable(nullptr) == 0);
  std::vector<char> plain(4096);
  CHECK(shmem::ext_free_shareable(plain.data()) != 0);
  CHECK(error().find("is not the start of memory from ext_alloc_shareable") != std::string::npos);

  constexpr size_t kBytes = 8192;
  char* buf = static_cast<char*>(shmem::ext_alloc_shareable(kBytes));
  REQUIRE_MESSAGE(buf != nullptr, error());
  // The last PE offers private memory: it names why, every other PE names it.
  void* offered = me == n - 1 ? static_cast<void*>(plain.data()) : buf;
  CHECK(shmem::buffer_register_symmetric(offered, 4096) != 0);
  if (me == n - 1)
    CHECK(error().find("is not memory from mori::shmem::ext_alloc_shareable, the only memory that "
                       "same-node peers can map on the host backend") != std::string::npos);
  else
    CHECK(error() == "buffer_register_symmetric: it failed on PE " + std::to_string(n - 1));
  // A range running past its allocation.
  CHECK(shmem::buffer_register_symmetric(buf + 4096, 4097) != 0);
  CHECK(error().find("runs past the end of its ext_alloc_shareable allocation of 8192 bytes") !=
        std::string::npos);
  // Nothing was left registered: the whole allocation registers now, and is then in use.
  REQUIRE_MESSAGE(shmem::buffer_register_symmetric(buf, kBytes) == 0, error());
  CHECK(shmem::addr_accessible(buf + 100, (me + 1) % n) == 1);
  CHECK(shmem::ext_free_shareable(buf) != 0);
  CHECK(error().find(": buffer_deregister it first") != std::string::npos);
  REQUIRE(shmem::buffer_deregister(buf, kBytes) == 0);
  CHECK(shmem::ext_free_shareable(buf) == 0);
  REQUIRE(shmem::finalize() == 0);
}
