// init, init_attr, get_unique_id, finalize and the queries.
#include "runtime/init.hpp"

#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include "mori/shmem/host_api.hpp"
#include "runtime/amo_route.hpp"
#include "runtime/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/exit_line.hpp"
#include "runtime/host_only.hpp"
#include "runtime/node.hpp"
#include "runtime/runtime.hpp"
#include "runtime/team_table.hpp"

namespace mori::shmem {

using runtime::report;
using runtime::require;
using runtime::Runtime;

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// MPI for init(): initialise it if nobody has; it cannot be initialised again once finalised.
Status ensure_mpi(bool* initialized_here) {
  int finalized = 0, initialized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return Status::error("MPI is already finalised (MPI cannot be initialised twice)");
  MPI_Initialized(&initialized);
  *initialized_here = false;
  if (initialized) return {};
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return Status::error("MPI_Init_thread failed");
  *initialized_here = true;
  return {};
}

const char* atomic_cap_name(runtime::AtomicCap cap) {
  switch (cap) {
    case runtime::AtomicCap::kGlob:
      return "IBV_ATOMIC_GLOB";
    case runtime::AtomicCap::kHca:
      return "IBV_ATOMIC_HCA";
    default:
      return "IBV_ATOMIC_NONE";
  }
}

// The AMO table (runtime/amo_route.hpp) from every PE's NIC capability; one line at init where a
// NIC has no atomics.
Status route_amos(Runtime& rt, const std::vector<uint8_t>& reach) {
  rt.amo_transports = rt.transports;
  if (!rt.rdma) return {};
  const auto mine = static_cast<uint8_t>(rt.rdma->atomic_cap());
  std::vector<uint8_t> gathered(rt.n_pes);
  MORI_TRY(rt.boot->allgather(&mine, gathered.data(), 1));
  std::vector<runtime::AtomicCap> caps(rt.n_pes);
  for (int pe = 0; pe < rt.n_pes; ++pe) caps[pe] = static_cast<runtime::AtomicCap>(gathered[pe]);
  const runtime::AmoRoute route = runtime::route_amos(reach, caps, rt.n_pes, rt.rank);
  rt.amo_transports = route.transports;
  if (route.no_nic_atomics) rt.state_flags |= state::kNoNicAtomics;
  if (caps[rt.rank] == runtime::AtomicCap::kNone)
    std::fprintf(stderr,
                 "mori: init: PE %d: RDMA device %s reports atomic_cap %s: AMOs over RDMA will "
                 "trap (puts and gets work)\n",
                 rt.rank, rt.rdma->device_name().c_str(), atomic_cap_name(caps[rt.rank]));
  return {};
}

// Queue pairs to the PEs that P2P does not reach, and to those whose AMOs may go over RDMA
// (route_amos). Collective: every PE takes part when any PE needs RDMA. Without RDMA devices those
// PEs become unreachable, said once per node, and everything else keeps working.
Status connect_rdma(Runtime& rt) {
  const int n = rt.n_pes;
  std::vector<uint8_t> reach(static_cast<size_t>(n) * n);  // every PE's transport table
  MORI_TRY(rt.boot->allgather(rt.transports.data(), reach.data(), n));
  rt.amo_transports = rt.transports;
  const std::vector<bool> needs = runtime::rdma_queue_needs(reach, n, rt.rank);
  bool mine = false, anyone = false;
  for (int pe = 0; pe < n; ++pe)
    mine |= rt.transports[pe] == static_cast<uint8_t>(state::Transport::kRdma);
  for (uint8_t t : reach) anyone |= t == static_cast<uint8_t>(state::Transport::kRdma);
  if (!anyone) return {};
  bool no_devices = false;
  MORI_TRY(runtime::open_rdma_network(rt, needs, &rt.rdma, &no_devices));
  if (no_devices) {
    if (rt.local_rank == 0 && mine)
      std::fprintf(stderr, "mori: init: no RDMA devices: inter-node PEs unreachable\n");
    for (int pe = 0; pe < n; ++pe)
      if (rt.transports[pe] == static_cast<uint8_t>(state::Transport::kRdma))
        rt.transports[pe] = static_cast<uint8_t>(state::Transport::kUnreachable);
    rt.amo_transports = rt.transports;
    return {};
  }
  rt.heap.rkeys = rt.rdma->heap_rkeys();
  rt.heap.lkey = rt.rdma->heap_lkey();
  return route_amos(rt, reach);
}

// malloc_align aligns the address, base + offset, and keeps the offset the same on every PE: both
// hold for alignments up to kBaseAlignment only if every PE's base is a multiple of it. Each
// backend places its heap so by construction; this is the check, which every PE makes on the same
// gathered bases so that all fail together.
Status check_heap_bases(const std::vector<uint64_t>& bases) {
  for (size_t pe = 0; pe < bases.size(); ++pe) {
    if (bases[pe] % heap::kBaseAlignment != 0) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "heap: PE %zu's heap base 0x%" PRIx64 " is not a multiple of %zu bytes", pe,
                    bases[pe], heap::kBaseAlignment);
      return Status::error(text);
    }
  }
  return {};
}

// Everything after the bootstrap exists: node layout, heap, transports, device state.
Status build(Runtime& rt) {
  bootstrap::Bootstrap& boot = *rt.boot;
  rt.rank = boot.rank();
  rt.n_pes = boot.size();
  MORI_TRY(runtime::find_same_node(boot, rt.settings.pes_per_node, &rt.same_node, &rt.local_rank));
  const std::vector<bool>& same_node = rt.same_node;
  MORI_TRY(backend::open_device(rt.local_rank));
  // MORI_SHMEM_PES_PER_NODE splits one machine into test "nodes": all the job's PEs share it.
  backend::note_machine_pes(
      rt.settings.pes_per_node > 0
          ? rt.n_pes
          : static_cast<int>(std::count(same_node.begin(), same_node.end(), true)));

  uint64_t nonce = 0;
  if (rt.rank == 0) nonce = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
  MORI_TRY(boot.broadcast(&nonce, sizeof nonce, 0));

  heap::HeapConfig config;
  config.mode = rt.settings.heap_mode;
  config.size = rt.settings.heap_size;
  config.chunk_size = rt.settings.vmm_chunk_size;
  config.job_nonce = nonce;
  config.timeout = rt.settings.bootstrap_timeout;
  MORI_TRY(heap::make_heap_memory(config, boot, same_node, &rt.memory));
  const uint64_t my_base = reinterpret_cast<uint64_t>(rt.memory->base());
  rt.heap.base = my_base;
  rt.heap.size = rt.memory->size();
  rt.heap.remote_bases.assign(rt.n_pes, 0);
  MORI_TRY(boot.allgather(&my_base, rt.heap.remote_bases.data(), sizeof my_base));
  MORI_TRY(check_heap_bases(rt.heap.remote_bases));
  rt.allocator =
      std::make_unique<heap::SymmetricAllocator>(rt.memory->size(), my_base, heap::kBaseAlignment);
  MORI_TRY(rt.allocator->allocate(runtime::kInternalBytes, 4096, &rt.internal_offset));
  // Allocated in the same order on every PE, so at the same offset: symmetric.
  MORI_TRY(rt.allocator->allocate(rt.team_scratch_bytes(), 4096, &rt.team_scratch_offset));
  MORI_TRY(rt.memory->ensure_mapped(rt.allocator->high_water()));
  MORI_TRY(
      backend::fill_device(rt.memory->base() + rt.internal_offset, 0, runtime::kInternalBytes));

  // P2P to every same-node PE unless MORI_DISABLE_P2P; then only this PE's own memory is reached
  // directly and the rest goes over RDMA, as between nodes.
  const bool p2p = !env_flag("MORI_DISABLE_P2P");
  rt.transports.assign(rt.n_pes, static_cast<uint8_t>(state::Transport::kRdma));
  rt.heap.peer_bases.assign(rt.n_pes, 0);
  rt.heap.rkeys.assign(rt.n_pes, 0);
  for (int pe = 0; pe < rt.n_pes; ++pe) {
    if (pe == rt.rank || (p2p && same_node[pe])) {
      rt.transports[pe] = static_cast<uint8_t>(state::Transport::kP2P);
      rt.heap.peer_bases[pe] = reinterpret_cast<uint64_t>(rt.memory->peer_base(pe));
    }
  }
  MORI_TRY(connect_rdma(rt));
  MORI_TRY(runtime::init_teams(rt));
  void* error = nullptr;
  MORI_TRY(backend::alloc_host_visible(sizeof(state::DeviceError), &error));
  rt.error = static_cast<state::DeviceError*>(error);
  std::memset(rt.error, 0, sizeof(state::DeviceError));
  MORI_TRY(runtime::open_contexts(rt));
  MORI_TRY(rt.publish());
  // Before the last barrier: once any PE returns from init, every PE's exit line listens.
  if (!rt.abort_job) MORI_TRY(runtime::open_exit_line(rt));
  return boot.barrier();
}

// What mori gives over MPI: the thread level (mori's MPI calls are made one at a time, under the
// API lock, from whichever thread calls mori: MPI_THREAD_SERIALIZED suffices for
// kThreadMultiple, and a lower MPI level is the most mori can give), and global_exit's way out.
void use_mpi(const MPI_Comm* user_comm, Runtime& rt) {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  rt.thread_level = level >= MPI_THREAD_SERIALIZED ? kThreadMultiple
                    : level == MPI_THREAD_FUNNELED ? kThreadFunneled
                                                   : kThreadSingle;
  const MPI_Comm comm = user_comm ? *user_comm : MPI_COMM_WORLD;
  rt.abort_job = [comm](int status) { MPI_Abort(comm, status); };
}

// The bootstrap that init and init_attr ask for with `flags`.
Status connect(bool from_init, unsigned flags, const InitAttr* attr, Runtime& rt) {
  if (flags == MORI_SHMEM_INIT_WITH_MPI_COMM) {
    if (from_init) MORI_TRY(ensure_mpi(&rt.mpi_initialized_here));
    MORI_TRY(bootstrap::make_mpi_bootstrap(attr ? attr->mpi_comm : nullptr, &rt.boot));
    use_mpi(attr ? static_cast<const MPI_Comm*>(attr->mpi_comm) : nullptr, rt);
    return Status{};
  }
  if (flags == MORI_SHMEM_INIT_WITH_UNIQUEID) {
    if (!attr)
      return Status::error(
          "MORI_SHMEM_INIT_WITH_UNIQUEID needs an attr with rank, n_ranks and uid");
    if (attr->n_ranks < 1 || attr->rank < 0 || attr->rank >= attr->n_ranks) {
      return Status::error("rank " + std::to_string(attr->rank) +
                           " is not in [0, n_ranks = " + std::to_string(attr->n_ranks) + ")");
    }
    return bootstrap::make_tcp_bootstrap(attr->uid, attr->rank, attr->n_ranks,
                                         rt.settings.bootstrap_timeout, &rt.boot);
  }
  return Status::error("unknown flags " + std::to_string(flags) +
                       " (MORI_SHMEM_INIT_WITH_MPI_COMM = 0, MORI_SHMEM_INIT_WITH_UNIQUEID = 1)");
}

// Every way in: `connect` sets rt.boot (and may start MPI), then build() does the rest.
int start(const char* api, const std::function<Status(Runtime&)>& connect) {
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  if (runtime::current()) return report(api, "already initialised (call finalize first)");
  auto rt = std::make_unique<Runtime>();
  if (Status s = env::load(&rt->settings); !s.ok()) return report(api, s);
  Status s = connect(*rt);
  if (s.ok()) s = build(*rt);
  if (!s.ok()) {
    const bool finalize_mpi = rt->mpi_initialized_here;
    rt.reset();
    if (finalize_mpi) MPI_Finalize();
    backend::close_device();
    return report(api, s);
  }
  runtime::set_current(std::move(rt));
  return 0;
}

}  // namespace

int init() {
  runtime::host_only("init");
  return start("init", [](Runtime& rt) {
    return connect(true, MORI_SHMEM_INIT_WITH_MPI_COMM, nullptr, rt);
  });
}

int init_attr(unsigned flags, const InitAttr* attr) {
  runtime::host_only("init_attr");
  return start("init_attr", [&](Runtime& rt) { return connect(false, flags, attr, rt); });
}

int get_unique_id(UniqueId* uid) {
  runtime::host_only("get_unique_id");
  runtime::clear_error();
  if (!uid) return report("get_unique_id", "uid is null");
  if (Status s = bootstrap::new_unique_id(uid); !s.ok()) return report("get_unique_id", s);
  return 0;
}

int finalize() {
  runtime::host_only("finalize");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  Runtime* rt = runtime::require_device("finalize");
  if (!rt) return -1;
  // Every PE must be done with every other PE's memory before any of it goes away.
  Status synced = backend::synchronize();
  if (synced.ok() && rt->rdma) synced = rt->rdma->drain();
  if (synced.ok()) synced = rt->boot->barrier();
  state::GpuStates cleared{};
  (void)backend::publish(cleared);
  for (void* m : rt->modules) (void)backend::publish_to_module(m, cleared);
  std::unique_ptr<Runtime> owned = runtime::take_current();
  if (owned->error) backend::free_host_visible(owned->error);
  const bool finalize_mpi = owned->mpi_initialized_here;
  owned.reset();
  backend::close_device();
  if (finalize_mpi) MPI_Finalize();
  return synced.ok() ? 0 : report("finalize", synced);
}

int my_pe() {
  MORI_LANE_FORM(my_pe());
  Runtime* rt = require("my_pe");
  return rt ? rt->rank : -1;
}
int n_pes() {
  MORI_LANE_FORM(n_pes());
  Runtime* rt = require("n_pes");
  return rt ? rt->n_pes : -1;
}
int num_qp_per_pe() {
  runtime::host_only("num_qp_per_pe");
  Runtime* rt = require("num_qp_per_pe");
  return rt ? rt->settings.num_qp_per_pe : -1;
}

}  // namespace mori::shmem

namespace mori::runtime {

int init_with_bootstrap(const char* api, std::unique_ptr<bootstrap::Bootstrap> boot) {
  return shmem::start(api, [&](Runtime& rt) {
    if (!boot) return Status::error("no bootstrap given");
    if (boot->size() < 1 || boot->rank() < 0 || boot->rank() >= boot->size()) {
      return Status::error("rank " + std::to_string(boot->rank()) +
                           " is not in [0, size = " + std::to_string(boot->size()) + ")");
    }
    rt.boot = std::move(boot);
    return Status{};
  });
}

}  // namespace mori::runtime
