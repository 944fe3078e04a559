// The host API of mori::shmem, with the names and semantics of the original mori's user guide
// (docs/runtime.md lists the calls and where they differ).
//
// Every call that can fail returns a status (0 on success) or a null pointer / 0 address, logs one
// line to stderr naming the cause ("mori: malloc_align: alignment 3 is not a power of two"), and
// keeps that line for last_error(). No call exits the process or asserts.
//
// Collective calls, which every PE makes with the same arguments in the same order: init,
// init_attr, init_thread, finalize, malloc, malloc_align, malloc_with_hints, ext_malloc_with_flags,
// calloc, realloc, free, buffer_register, buffer_register_symmetric, buffer_deregister,
// barrier_all. Collective over a team (its parent's PEs for a split): team_split_strided,
// team_split_2d, team_destroy.
//
// Any thread may make any call (init_thread's kThreadMultiple; docs/runtime.md, "Thread levels").
// On the host backend a kernel may call them too: the names the device API shares (barrier_all,
// my_pe, n_pes, team_my_pe, team_n_pes, team_translate_pe, ptr_p2p) then act as their device
// forms, as on the GPU; every other call fails the launch, naming itself.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mori/shmem/shared_queries.hpp"
#include "mori/shmem/unique_id.hpp"
#include "mori/shmem/vocabulary.hpp"

namespace mori::shmem {

// init_attr flags.
inline constexpr unsigned MORI_SHMEM_INIT_WITH_MPI_COMM = 0;
inline constexpr unsigned MORI_SHMEM_INIT_WITH_UNIQUEID = 1;

struct InitAttr {
  int rank = -1;    // MORI_SHMEM_INIT_WITH_UNIQUEID: this PE's rank, 0 <= rank < n_ranks
  int n_ranks = 0;  // MORI_SHMEM_INIT_WITH_UNIQUEID: the number of PEs
  UniqueId uid{};   // MORI_SHMEM_INIT_WITH_UNIQUEID: from get_unique_id() on rank 0
  // MORI_SHMEM_INIT_WITH_MPI_COMM: an MPI_Comm*, or null for MPI_COMM_WORLD.
  void* mpi_comm = nullptr;
};

// ---- setup and teardown -------------------------------------------------------------------------
// Initialises over MPI_COMM_WORLD, calling MPI_Init first if nobody has (finalize then calls
// MPI_Finalize).
int init();
int init_attr(unsigned flags, const InitAttr* attr);
// On the PE that will be rank 0 (or on a launcher that then starts rank 0): creates the ID every
// rank passes to init_attr. It opens the TCP listener that rank 0's init_attr uses.
int get_unique_id(UniqueId* uid);
int finalize();

// ---- queries ------------------------------------------------------------------------------------
// my_pe() and n_pes(): shared_queries.hpp.
int num_qp_per_pe();  // MORI_NUM_QP_PER_PE (default 4); -1 before init
// As shmem_pe_accessible: 1 when `pe` is in [0, n_pes()) and this PE reaches it (P2P or RDMA),
// else 0 (without an error); 0 and the "not initialised" error before init.
int pe_accessible(int pe);
// As shmem_addr_accessible: 1 when a transfer to `addr` on `pe` works: `addr` is symmetric (in
// this PE's heap or in a registered buffer), pe_accessible(pe), and pe's copy is reached (over
// RDMA every registered buffer is; over P2P another PE's plain buffer_register buffer is not);
// else 0; 0 and an error before init.
int addr_accessible(const void* addr, int pe);

// The OpenSHMEM specification this API follows: 1.5.
void info_get_version(int* major, int* minor);
// Bytes info_get_name may write, the terminating NUL included (OpenSHMEM's SHMEM_MAX_NAME_LEN).
inline constexpr size_t kMaxNameLen = 256;
// Writes "mori <library version>" (e.g. "mori 0.1.0"), NUL-terminated, at most kMaxNameLen bytes.
void info_get_name(char* name);

// ---- symmetric memory ---------------------------------------------------------------------------
// The same offset in every PE's heap. The returned address is 256-byte aligned. nullptr on failure.
void* malloc(size_t size);
// The largest alignment malloc_align accepts: every PE's heap starts on a multiple of it, which is
// what lets one offset be an aligned address on every PE.
inline constexpr size_t kMaxAlignment = size_t{64} << 20;  // 64 MiB
// The returned address is a multiple of `alignment` (and of 256), on every PE. `alignment`: a power
// of two up to kMaxAlignment; others fail with the reason.
void* malloc_align(size_t alignment, size_t size);
// flags: 0; others are reserved for GPU memory kinds.
void* ext_malloc_with_flags(size_t size, unsigned flags);
// As shmem_calloc: count * size zeroed bytes, as malloc. A product that overflows size_t fails
// naming both; a zero count or size returns nullptr without an error.
void* calloc(size_t count, size_t size);
// As shmem_realloc: a new object of `size` bytes holding the first min(old, size) bytes of `ptr`'s,
// which is freed; the address may move. nullptr acts as malloc, a zero size as free (returns
// nullptr). On failure returns nullptr and `ptr` is still live, its contents unchanged.
void* realloc(void* ptr, size_t size);
int free(void* ptr);  // ptr from malloc*; nullptr is a no-op

// Registers a buffer outside the heap so that device calls may use it; every PE registers its own
// buffer of the same size. 0 on success. Peers reach it over RDMA only: a PE reached over P2P
// cannot (use buffer_register_symmetric).
int buffer_register(void* ptr, size_t size);
// As buffer_register, and every same-node peer also maps this PE's buffer, so that the buffers
// are addressable like heap memory over every transport (P2P included), as NVSHMEM's
// nvshmemx_buffer_register_symmetric and the original mori's ShmemSymmetricRegister. The buffer
// must be memory a peer can map: on the hip backend any hipMalloc memory (through IPC handles),
// on the host backend memory from ext_alloc_shareable; anything else is refused, naming why.
int buffer_register_symmetric(void* ptr, size_t size);
// Either kind; collective, after every PE's device work on the buffer is done.
int buffer_deregister(void* ptr, size_t size);
// Device memory that same-node peers can map, for buffer_register_symmetric: hipMalloc on the hip
// backend, a shared-memory (memfd) mapping on the host backend. Not collective, not symmetric.
// nullptr and an error on failure (a size of 0 included); free it with ext_free_shareable, after
// deregistering it.
void* ext_alloc_shareable(size_t size);
int ext_free_shareable(void* ptr);  // nullptr is a no-op

// ptr_p2p(ptr, my_pe, dest_pe): shared_queries.hpp.

// ---- teams (OpenSHMEM 1.5, section 9.4) -------------------------------------------------------
// A team is a small index (state/team.hpp): kTeamWorld, kTeamShared and kTeamSameLocalIndex are
// predefined; splits make others, at most MORI_SHMEM_MAX_TEAMS (default 64) live on a PE, the
// predefined ones included. kTeamInvalid is the spec's SHMEM_TEAM_INVALID. Team and the kTeam*
// names: vocabulary.hpp.

// shmem_team_config_t. num_contexts is a hint: it is kept for team_get_config, and
// team_create_ctx is not limited by it.
struct TeamConfig {
  int num_contexts = 0;
};
inline constexpr long kTeamNumContexts = 1;  // SHMEM_TEAM_NUM_CONTEXTS, the config_mask bit

// team_my_pe, team_n_pes and team_translate_pe: shared_queries.hpp.
// Collective over `parent`: the new team holds the parent's PEs start, start + stride, ...,
// (size of them, numbered in that order). *new_team gets it on its members and kTeamInvalid on the
// parent's other PEs. 0 on success; on a bad argument (start outside the parent, stride or size
// below 1, a last PE past the parent's end, an invalid parent) or past MORI_SHMEM_MAX_TEAMS, every
// PE of the parent fails with the reason and gets kTeamInvalid.
int team_split_strided(Team parent, int start, int stride, int size, const TeamConfig* config,
                       long config_mask, Team* new_team);
// Collective over `parent`: its PEs as a grid xrange wide (a larger xrange counts as the parent's
// size), row by row. *xaxis_team gets this PE's row (the PEs with its y coordinate, numbered by
// x), *yaxis_team its column. Errors as team_split_strided (xrange below 1), and then neither team
// is made.
int team_split_2d(Team parent, int xrange, const TeamConfig* xaxis_config, long xaxis_mask,
                  Team* xaxis_team, const TeamConfig* yaxis_config, long yaxis_mask,
                  Team* yaxis_team);
// As shmem_team_get_config: writes the fields `config_mask` selects (kTeamNumContexts: the
// num_contexts the team was made with, 0 if its mask did not select it). 0, or -1 with the reason
// for a team invalid on this PE or a null config with a nonzero mask.
int team_get_config(Team team, long config_mask, TeamConfig* config);
// Collective over `team`, after every member's device work with it is done; frees its index. The
// predefined teams cannot be destroyed; kTeamInvalid is a no-op.
int team_destroy(Team team);

// ---- contexts (OpenSHMEM 1.5, section 9.5) -----------------------------------------------------
// A context is one of this PE's RDMA queue-pair indices (state/context.hpp): QP 0 is kCtxDefault,
// the others (1 to MORI_NUM_QP_PER_PE - 1) are handed out one per live context from a pool that
// device code's ctx_create<S> (shmem/ctx.hpp) draws from too. Not collective, and any thread may
// call them. Ctx and the kCtx* names: vocabulary.hpp.

// As shmem_ctx_create: *ctx gets a free QP, whatever the options (kCtxPrivate, kCtxSerialized,
// kCtxNoStore or 0; each context has a QP of its own, so none changes what it gets). 0 on success;
// -1, *ctx = kCtxInvalid and the reason when every QP beyond the default is taken, on unknown
// option bits, or before init.
int ctx_create(long options, Ctx* ctx);
// As shmem_ctx_destroy, returning 0 or -1 (OpenSHMEM: void): frees ctx's QP for a later create.
// kCtxInvalid is a no-op (as OpenSHMEM 1.5 and rocSHMEM); the default context, an index that is
// no context of this job, and a context that is not live (destroyed twice) fail with the reason.
// The host cannot quiet the device's QPs: end the device work on ctx with ctx_quiet first (the
// device's ctx_destroy<S> quiets by itself, as OpenSHMEM's does). A QP freed with operations still
// in flight stays correct for its next owner, whose quiet then waits for them too.
int ctx_destroy(Ctx ctx);

// ---- synchronisation and modules ----------------------------------------------------------------
// Every PE waits for all others; memory writes made before the barrier are visible to all PEs
// after it.
int barrier_all();
// Copies the live device state into a separately loaded code object: a hipModule_t on the hip
// backend, a dlopen handle on the host backend. Refuses a module built for another device-state ABI
// version.
int module_init(void* module);
// Forgets a module given to module_init: later state changes (buffer_register, ...) no longer
// reach it. Call it before unloading the module (hipModuleUnload, dlclose); its device state keeps
// what it was last given. Like NVSHMEM's nvshmemx_cumodule_finalize.
int module_finalize(void* module);

// The reason of the last failed call on this thread ("" if none).
const char* last_error();

// What the first device call to fail since init (or since the last device_error()) recorded before
// its kernel trapped, as one line, e.g. "timeout: quiet timed out after 200 ms: qp 0x101 posted 4,
// completed 3, cq consumed 0 (PE 1)"; "" if nothing failed. Reading clears the record, as
// hipGetLastError does. Call it after the failed launch has ended (host backend). On the hip
// backend ROCm aborts the process on the trap, before any host code runs again: the record is then
// printed at the abort, "mori: device error: <line>" (runtime/abort_report.hpp). Release GPU builds
// record no text: the line then names the kind and the fields (PE, address, observed value, and for
// RDMA the queue pair's indices).
const char* device_error();

// ---- OpenSHMEM 1.5: threads, exit, team pointers and contexts, hinted allocation ---------------
// Thread levels (shmem_init_thread, section 9.2): SHMEM_THREAD_SINGLE ... SHMEM_THREAD_MULTIPLE,
// with the values of Open MPI's shmem.h.
inline constexpr int kThreadSingle = 0;
inline constexpr int kThreadFunneled = 1;
inline constexpr int kThreadSerialized = 2;
inline constexpr int kThreadMultiple = 3;
// As init, then *provided = the level mori gives: kThreadMultiple (every host API call is safe
// from any thread: each takes the API lock, and the queries read state that only collective calls
// change), unless mori reaches MPI through a communicator whose MPI was initialised below
// MPI_THREAD_SERIALIZED: then MPI's level (mori makes its MPI calls from the calling thread).
// Collective calls stay collective: every PE makes them in the same order, so threads of one PE
// that make collective calls must order them among themselves. `requested` outside
// [kThreadSingle, kThreadMultiple] or a null `provided` fails with the reason, before init.
int init_thread(int requested, int* provided);
// The level init_thread gave (also after init and init_attr); -1 and an error before init.
int query_thread(int* provided);

// As shmem_global_exit: ends every PE's process with exit status `status`, whatever each is doing
// (in a kernel, a barrier, a bootstrap call). Over MPI it is MPI_Abort(comm, status) on mori's
// communicator, so the launcher reports `status`; over the unique-ID bootstrap each PE's exit line
// (a listener and a watcher thread, opened at init) receives the status and the PE exits with it.
// Before init it ends this process alone. stdio buffers are flushed; nothing else is released.
[[noreturn]] void global_exit(int status);

// As shmem_team_ptr: where this process loads and stores the copy of the symmetric object at
// `dest` (in this PE's heap or a symmetric registration) held by `pe` of `team`, or nullptr when
// that copy is not mapped here (RDMA, a plain buffer_register buffer) or `pe` is not in the team.
void* team_ptr(Team team, const void* dest, int pe);

// As shmem_team_create_ctx: ctx_create, remembering `team` for ctx_get_team. `team` must be valid
// on this PE. mori's context calls (ctx_put, ...) take world PE numbers for every context: for a
// team's context, translate with team_translate_pe. Not collective.
int team_create_ctx(Team team, long options, Ctx* ctx);
// As shmem_ctx_get_team: kTeamWorld for kCtxDefault and for contexts from ctx_create (host or
// device), the team of team_create_ctx's, kTeamInvalid once that team is destroyed. A context that
// is not live on this PE fails with the reason, *team = kTeamInvalid.
int ctx_get_team(Ctx ctx, Team* team);

// shmem_malloc_with_hints' hints (section 9.3.2): the object will be the target of remote atomics,
// or of signals. mori's heap serves both already (over RDMA it is registered with remote atomic
// access), so the hints change nothing about where the object goes.
inline constexpr long kMallocAtomicsRemote = 1 << 0;  // SHMEM_MALLOC_ATOMICS_REMOTE
inline constexpr long kMallocSignalRemote = 1 << 1;   // SHMEM_MALLOC_SIGNAL_REMOTE
inline constexpr long kMallocHints = kMallocAtomicsRemote | kMallocSignalRemote;
// As malloc, collective; `hints`: 0 or kMallocHints' bits, others fail with the reason on every
// PE (as every PE passes the same hints).
void* malloc_with_hints(size_t size, long hints);

}  // namespace mori::shmem
