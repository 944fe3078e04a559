// The runtime's state between init and finalize: one per process (one PE per process on both
// backends).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "heap/allocator.hpp"
#include "heap/heap_memory.hpp"
#include "mori/shmem/host_api.hpp"
#include "mori/state/gpu_states.hpp"
#include "mori/state/internal_area.hpp"
#include "runtime/backend.hpp"
#include "runtime/env.hpp"
#include "runtime/rdma_network.hpp"

namespace mori::runtime {

// Device-visible copy of a host vector, owned: freed with the Runtime.
struct DeviceArray {
  void* ptr = nullptr;
  ~DeviceArray();
  Status upload(const void* data, size_t bytes);
};

// A symmetric range the device reaches: the heap (Runtime::heap) or a registered buffer, as its
// entry of GpuStates::regions describes it.
struct Region {
  Region() = default;
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  ~Region();  // unmaps the imports
  uint64_t base = 0;
  uint64_t size = 0;
  std::vector<uint64_t> peer_bases;    // P2P view of each PE's copy (0: none)
  std::vector<uint64_t> remote_bases;  // each PE's own address of its copy
  std::vector<uint32_t> rkeys;
  uint32_t lkey = 0;
  // buffer_register_symmetric: the same-node peers' copies mapped into this process.
  std::vector<backend::Imported> imports;
  DeviceArray d_peer_bases, d_remote_bases, d_rkeys;
};

// Frees memory from backend::alloc_host_visible.
struct HostVisibleFree {
  void operator()(void* p) const { backend::free_host_visible(p); }
};

class ExitLine;  // runtime/exit_line.hpp
struct ExitLineClose {
  void operator()(ExitLine* line) const;
};

struct Runtime {
  env::Settings settings;
  std::unique_ptr<bootstrap::Bootstrap> boot;
  std::unique_ptr<heap::HeapMemory> memory;
  std::unique_ptr<heap::SymmetricAllocator> allocator;
  // Queue pairs and keys to the PEs reached over RDMA; null when none is. Declared after the heap,
  // so destroyed before it: the NIC stops before the memory it serves goes away.
  std::unique_ptr<RdmaNetwork> rdma;
  int rank = 0, n_pes = 0, local_rank = 0;
  std::vector<bool> same_node;        // PEs on this node (runtime/node.hpp), this one included
  bool mpi_initialized_here = false;  // init() called MPI_Init, so finalize() calls MPI_Finalize
  uint64_t allocations = 0;  // symmetric allocation calls so far (numbered for symmetry checks)

  std::vector<uint8_t> transports;
  // The transport of AMOs to each PE (runtime/amo_route.hpp); empty: `transports`.
  std::vector<uint8_t> amo_transports;
  uint32_t state_flags = 0;  // GpuStates::flags (state::GpuStatesFlag)
  Region heap;               // this PE's symmetric heap: GpuStates::regions[-1]
  DeviceArray d_transports, d_amo_transports, d_regions;
  std::map<uint64_t, std::unique_ptr<Region>> regions;  // the registered buffers, by base
  state::DeviceError* error = nullptr;                  // host-visible device-error record
  // This PE's context pool (state/context.hpp), host-visible: the host API and device code both
  // claim and release QPs in it (runtime/contexts.cpp, shmem/ctx.hpp).
  std::unique_ptr<state::ContextPool, HostVisibleFree> contexts;
  size_t internal_offset = 0;
  // The device collectives' staging (GpuStates::team_scratch): max_teams slices of
  // settings.team_scratch bytes, allocated right after the internal area.
  size_t team_scratch_offset = 0;
  size_t team_scratch_bytes() const {
    return static_cast<size_t>(settings.max_teams) * settings.team_scratch;
  }
  // The team table (state/team.hpp), [settings.max_teams]: this PE's copy, the device's (whose
  // address GpuStates::teams publishes once; entries are written in place), and what only the host
  // keeps of each live team (runtime/teams.cpp).
  struct TeamHost {
    // Splits of the team run over it. Teams may share one (a team with the same members as its
    // parent uses the parent's).
    std::shared_ptr<bootstrap::Bootstrap> boot;
    int num_contexts = 0;  // TeamConfig::num_contexts it was made with, for team_get_config
  };
  std::vector<state::TeamDescriptor> teams;
  DeviceArray d_teams;
  std::vector<TeamHost> team_host;
  // Modules given to module_init and not to module_finalize: republished on every state change.
  std::vector<void*> modules;
  // The team each of this PE's QPs' contexts belongs to, for ctx_get_team: kTeamWorld unless
  // team_create_ctx made it (runtime/contexts.cpp); kTeamInvalid once that team is destroyed.
  std::vector<state::Team> ctx_teams;
  // What init_thread and query_thread report (runtime/threads.cpp).
  int thread_level = shmem::kThreadMultiple;
  // How global_exit ends every PE: MPI_Abort on mori's communicator over MPI; else null, and the
  // exit line (runtime/exit_line.hpp) does it.
  std::function<void(int status)> abort_job;
  std::unique_ptr<ExitLine, ExitLineClose> exit_line;

  state::GpuStates states{};
  // Rebuilds `states` (and the regions table) and publishes it to this process and every module.
  Status publish();
};

// Guards every host API call; the runtime is created by init and destroyed by finalize.
std::mutex& api_mutex();
Runtime* current();  // null outside init..finalize
void set_current(std::unique_ptr<Runtime> rt);
std::unique_ptr<Runtime> take_current();

// Allocates the context pool with only the default context (QP 0) live (runtime/contexts.cpp).
Status open_contexts(Runtime& rt);

// The symmetric range holding `ptr`, this PE's heap or a registered buffer: its base and size
// here and every PE's P2P view of it (0: not mapped here). `peer_bases` is null when `ptr` is not
// symmetric (runtime/memory.cpp).
struct SymmetricRange {
  uint64_t base = 0, size = 0;
  const std::vector<uint64_t>* peer_bases = nullptr;
};
SymmetricRange find_symmetric(const Runtime& rt, uint64_t ptr);
// `pe` is a PE of the job that this PE reaches over some transport.
bool reachable(const Runtime& rt, int pe);

// The runtime, or null after reporting "<api>: not initialised" when there is none.
Runtime* require(const char* api);
// require(), and the PE's GPU made the calling thread's current device (backend::use_device): for
// every entry that touches the device, since HIP's current device is per thread.
Runtime* require_device(const char* api);

using state::kInternalBytes;  // the internal area at offset 0 (state/internal_area.hpp)
// What the runtime reserves at the start of the heap with the default settings: the internal area,
// then the collectives' staging (init.cpp); user allocations follow.
inline constexpr size_t kDefaultReservedBytes =
    kInternalBytes + env::kDefaultMaxTeams * env::kDefaultTeamScratch;
static_assert(
    env::kMaxTeamsLimit == state::kInternalTeams,
    "MORI_SHMEM_MAX_TEAMS's limit: as many teams as the internal area has sync words for");

}  // namespace mori::runtime
