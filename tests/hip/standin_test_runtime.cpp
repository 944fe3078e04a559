// The hip runtime path through the stand-in libamdhip64: init, the static and the VMM heap, IPC
// between 2 and 4 processes, buffer registration, module_init of a loaded gfx942 code object and
// finalize; each PE checks what the host can see of the others' memory.
#include <doctest/doctest.h>
#include <hip/hip_runtime_api.h>
#include <stdlib.h>

#include <cstring>
#include <string>

#include "fork_children.hpp"
#include "mori/shmem.hpp"
#include "mori/state/gpu_states.hpp"
#include "standin_support.hpp"

namespace shmem = mori::shmem;
using mori::test::run_ranks;

namespace {

// Each PE writes its rank into slot [rank] of every PE's copy of `slots`, through ptr_p2p (IPC
// mappings on the static heap, imported VMM handles on the VMM heap), then reads all of them.
std::string heap_round(int rank, int n, size_t bytes) {
  auto* slots = static_cast<uint64_t*>(shmem::malloc(bytes));
  PE_CHECK(slots != nullptr);
  for (int pe = 0; pe < n; ++pe) {
    auto* peer =
        reinterpret_cast<uint64_t*>(shmem::ptr_p2p(reinterpret_cast<uint64_t>(slots), rank, pe));
    PE_CHECK(peer != nullptr);
    peer[rank] = 1000 * pe + rank;
    peer[bytes / sizeof(uint64_t) - 1 - rank] = 7000 + rank;  // the allocation's far end
  }
  PE_CHECK(shmem::barrier_all() == 0);
  for (int src = 0; src < n; ++src) {
    PE_CHECK(slots[src] == uint64_t(1000 * rank + src));
    PE_CHECK(slots[bytes / sizeof(uint64_t) - 1 - src] == uint64_t(7000 + src));
  }
  PE_CHECK(shmem::barrier_all() == 0);
  PE_CHECK(shmem::free(slots) == 0);
  // calloc zeroes through hipMemset (backend::fill_device).
  auto* zeroed = static_cast<uint64_t*>(shmem::calloc(bytes / sizeof(uint64_t), sizeof(uint64_t)));
  PE_CHECK(zeroed != nullptr);
  PE_CHECK(zeroed[0] == 0 && zeroed[bytes / sizeof(uint64_t) - 1] == 0);
  PE_CHECK(shmem::free(zeroed) == 0);
  return "";
}

// A hipMalloc buffer registered symmetrically: each PE writes into every peer's through the
// peer's IPC mapping.
std::string registered_round(int rank, int n) {
  void* buf = nullptr;
  PE_CHECK(hipMalloc(&buf, 4096) == hipSuccess);
  std::memset(buf, 0, 4096);
  PE_CHECK(shmem::buffer_register_symmetric(buf, 4096) == 0);
  for (int pe = 0; pe < n; ++pe) {
    auto* peer =
        reinterpret_cast<int32_t*>(shmem::ptr_p2p(reinterpret_cast<uint64_t>(buf), rank, pe));
    PE_CHECK(peer != nullptr);
    peer[rank] = 50 + rank;
  }
  PE_CHECK(shmem::barrier_all() == 0);
  for (int src = 0; src < n; ++src) PE_CHECK(static_cast<int32_t*>(buf)[src] == 50 + src);
  PE_CHECK(shmem::buffer_deregister(buf, 4096) == 0);
  // Host memory that is not hipMalloc's is refused for symmetric registration, naming why.
  static char plain[4096];
  PE_CHECK(shmem::buffer_register_symmetric(plain, sizeof plain) != 0);
  PE_CHECK(std::string(shmem::last_error()).find("not hipMalloc memory") != std::string::npos);
  PE_CHECK(hipFree(buf) == hipSuccess);
  return "";
}

// module_init copies this PE's device state into the module's globalGpuStates.
std::string module_round(int rank, int n) {
  hipModule_t module = nullptr;
  PE_CHECK(hipModuleLoad(&module, MORI_TEST_MODULE) == hipSuccess);
  mori::state::GpuStates seen{};
  PE_CHECK(mori::test::read_module_states(module, &seen) == "");
  PE_CHECK(seen.abi_version == 0);  // nothing published yet
  PE_CHECK(shmem::module_init(module) == 0);
  PE_CHECK(mori::test::read_module_states(module, &seen) == "");
  PE_CHECK(seen.abi_version == mori::state::kGpuStatesAbiVersion);
  PE_CHECK(seen.rank == rank);
  PE_CHECK(seen.n_pes == n);
  PE_CHECK(seen.heap_size > 0);
  PE_CHECK(shmem::module_finalize(module) == 0);
  PE_CHECK(hipModuleUnload(module) == hipSuccess);
  return "";
}

std::string run_pe(const shmem::UniqueId& id, int rank, int n, const char* mode) {
  setenv("MORI_SHMEM_MODE", mode, 1);
  setenv("MORI_SHMEM_HEAP_SIZE", "256M", 1);
  setenv("MORI_SHMEM_VMM_CHUNK_SIZE", "4M", 1);
  shmem::InitAttr attr;
  attr.rank = rank;
  attr.n_ranks = n;
  attr.uid = id;
  PE_CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) == 0);
  PE_CHECK(shmem::my_pe() == rank);
  int device = -1;
  PE_CHECK(hipGetDevice(&device) == hipSuccess);
  PE_CHECK(device == rank);  // the rank-th device of this node
  // Each step runs only if the ones before it passed.
  std::string failed = heap_round(rank, n, 64 << 10);
  if (failed.empty()) failed = heap_round(rank, n, 24 << 20);  // several VMM chunks at once
  if (failed.empty()) failed = registered_round(rank, n);
  if (failed.empty()) failed = module_round(rank, n);
  if (!failed.empty()) return failed;
  PE_CHECK(shmem::finalize() == 0);
  return "";
}

void run_job(int n, const char* mode) {
  shmem::UniqueId id;
  REQUIRE(shmem::get_unique_id(&id) == 0);
  auto run =
      run_ranks(n, [&](int rank) { return run_pe(id, rank, n, mode); }, std::chrono::seconds(60));
  REQUIRE(run.children.size() == static_cast<size_t>(n));
  for (const auto& c : run.children) {
    INFO(c.text);
    CHECK(c.exit_code == 0);
    CHECK(c.text.empty());
  }
}

}  // namespace

TEST_CASE("static heap at 2 PEs: init and IPC heap and registration and module_init and finalize") {
  run_job(2, "static_heap");
}
TEST_CASE("static heap at 4 PEs: init and IPC heap and registration and module_init and finalize") {
  run_job(4, "static_heap");
}
TEST_CASE(
    "VMM heap at 2 PEs: init and heap grown over VMM handles and registration and module_init") {
  run_job(2, "vmm_heap");
}
TEST_CASE(
    "VMM heap at 4 PEs: init and heap grown over VMM handles and registration and module_init") {
  run_job(4, "vmm_heap");
}

TEST_CASE("a VMM chunk that is not a multiple of the device's granularity fails init naming both") {
  setenv("MORI_SHMEM_MODE", "vmm_heap", 1);
  setenv("MORI_SHMEM_HEAP_SIZE", "64M", 1);
  setenv("MORI_SHMEM_VMM_CHUNK_SIZE", "1M", 1);
  shmem::InitAttr attr;
  attr.rank = 0;
  attr.n_ranks = 1;
  REQUIRE(shmem::get_unique_id(&attr.uid) == 0);
  CHECK(shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) != 0);
  CHECK(std::string(shmem::last_error()) ==
        "init_attr: heap: the VMM chunk size 1048576 is not a multiple of the device's allocation "
        "granularity 2097152 (MORI_SHMEM_VMM_CHUNK_SIZE)");
}
