// GpuStates: everything device code knows about the job, filled by the host runtime at init and
// read by every device call. It is the ABI between the runtime and device code (including
// separately loaded code objects, see module_init), so it is plain data, versioned and size-pinned,
// with the same layout on both backends: every pointer is a 64-bit device address on amdgcn and a
// 64-bit host address on the host backend.
#pragma once

#include <cstdint>

#include "mori/platform/common.hpp"
#include "mori/platform/macros.hpp"
#include "mori/state/context.hpp"
#include "mori/state/rdma_endpoint.hpp"
#include "mori/state/team.hpp"

namespace mori::state {

// Bump on any change of GpuStates or of a struct it points to. module_init refuses a module of
// another version.
inline constexpr uint32_t kGpuStatesAbiVersion = 9;

// How this PE reaches another. Chosen per PE at init from the node layout and MORI_DISABLE_P2P.
enum class Transport : uint8_t {
  kUnreachable = 0,
  // Peer memory mapped into this PE (XGMI/PCIe peer mapping; shared memory on the host backend).
  kP2P = 1,
  kRdma = 2,  // a NIC queue pair, driven by the GPU (IBGDA)
  kSdma = 3,  // the SDMA engines (delegates to P2P until a native engine exists)
};

// The NIC family the RDMA endpoints belong to: which provider encodes their WQEs. One per job.
enum class Nic : uint8_t {
  kNone = 0,  // no RDMA endpoints (every PE reached by P2P/SDMA, or none set up)
  kMlx5 = 1,
  kBnxt = 2,
  kIonic = 3,
};

// An entry of the device's transport table (GpuStates::transports): the Transport in the low four
// bits and, for kRdma, the job's NIC family in the high four, so that one compare of the entry
// tells an RDMA PE whose family the device code carries (transport/reach.hpp, rdma_reaches)
// where a second load and test of GpuStates::nic ran on every call, P2P's included.
constexpr uint8_t transport_entry(Transport t, Nic nic) {
  return static_cast<uint8_t>(static_cast<uint8_t>(t) |
                              (t == Transport::kRdma ? static_cast<uint8_t>(nic) << 4 : 0));
}

// "mlx5", "bnxt", "ionic" (as MORI_DEVICE_NIC spells them), "none".
constexpr const char* nic_name(Nic nic) {
  switch (nic) {
    case Nic::kMlx5:
      return "mlx5";
    case Nic::kBnxt:
      return "bnxt";
    case Nic::kIonic:
      return "ionic";
    default:
      return "none";
  }
}

// GpuStates::flags.
enum GpuStatesFlag : uint32_t {
  // Some PE's RDMA device reports atomic_cap IBV_ATOMIC_NONE (ibv_query_device(3)): an RDMA AMO
  // traps at the call (transport/rdma.hpp) where it would end in an error completion.
  kNoNicAtomics = 1,
};

// A buffer registered with buffer_register: [base, base + size) on this PE, the same offset on
// every PE.
struct RegisteredRegion {
  uint64_t base;
  uint64_t size;
  // [n_pes] where this PE reaches each PE's copy over P2P, 0 if it cannot.
  const uint64_t* peer_bases;
  const uint64_t* remote_bases;  // [n_pes] each PE's copy in that PE's own address space (RDMA)
  const uint32_t* rkeys;         // [n_pes] remote keys, when RDMA is set up
  uint32_t lkey;
  uint32_t reserved;
};
static_assert(sizeof(RegisteredRegion) == 48, "RegisteredRegion is part of the device-state ABI");

// What a device-error record's `code` means.
enum class DeviceErrorCode : uint32_t {
  kNone = 0,
  kBadPe = 1,            // PE out of range
  kBadAddress = 2,       // an address outside the heap and every registered buffer
  kBadSize = 3,          // a byte count or end address that overflows; elements outside a SymmObj
  kNotReachable = 4,     // the transport cannot reach that PE or that memory
  kTimeout = 5,          // a wait passed MORI_SHMEM_TIMEOUT_MS
  kNotBuilt = 6,         // a transport that is not built yet
  kBadArgument = 7,      // any other invalid argument (an unknown atomic code, ...)
  kCompletionError = 8,  // an RDMA error completion
};

// An RDMA queue's state at a failure, the low 32 bits of each count: its QP, and the WQEs posted
// (RdmaEndpoint::submitted), completed, and whose CQEs were consumed. The device-error record keeps
// one, and the engine's message prints the same one, so that the two agree.
struct QueueNote {
  uint32_t qp;  // 0: the failure involved no queue
  uint32_t posted;
  uint32_t completed;
  uint32_t consumed;
};

// The device-error record: the first failure a device call detects (a bad argument, a timed-out
// wait, an error completion) is written here before the kernel traps, so that the host can print
// what happened.
struct DeviceError {
  uint32_t code;      // 0: none (DeviceErrorCode, device API)
  int32_t pe;         // the PE the failed call targeted, -1 if none
  uint64_t address;   // the address involved, 0 if none
  uint64_t observed;  // the awaited value's state when a wait timed out
  QueueNote queue;    // RDMA: the queue at the time of the error
  char message[160];  // NUL-terminated, one line
};
static_assert(sizeof(DeviceError) == 200, "DeviceError is part of the device-state ABI");

struct GpuStates {
  uint32_t abi_version;   // kGpuStatesAbiVersion once initialised; 0 before init and after finalize
  uint32_t struct_bytes;  // sizeof(GpuStates) as built into the runtime
  int32_t rank;
  int32_t n_pes;
  int32_t num_qp_per_pe;
  uint32_t flags;  // GpuStatesFlag bits
  // This PE's symmetric heap: [heap_base, heap_base + heap_size).
  uint64_t heap_base;
  uint64_t heap_size;
  const uint8_t* transports;  // [n_pes] transport_entry() of each PE (this PE: kP2P)
  // [n_regions] the registered buffers. regions[-1] is the heap: its base and size (those above),
  // each PE's heap as mapped here, each PE's own address of it, its keys. So a SymmetricRef's
  // region (-1 for the heap) indexes the heap and the buffers alike, without a branch.
  const RegisteredRegion* regions;
  int32_t n_regions;
  uint32_t pad0;
  // [n_pes * num_qp_per_pe], entry pe * num_qp_per_pe + qp; null without RDMA, zeroed for PEs not
  // reached over RDMA.
  RdmaEndpoint* rdma_endpoints;
  // Symmetric scratch inside the heap that the runtime reserves for device barriers and signals.
  uint64_t* internal;
  uint64_t internal_bytes;
  DeviceError* error;  // this PE's device-error record, readable by the host after a trap
  // Deadline of every device wait (MORI_SHMEM_TIMEOUT_MS) in ticks of the device clock
  // (platform::clock_ticks: 10 ns on amdgcn, 1 ns on the host backend); 0 waits forever.
  uint64_t timeout_ticks;
  uint8_t nic;  // Nic of rdma_endpoints
  uint8_t pad[7];
  // [max_teams] this PE's team table, indexed by Team (state/team.hpp); entries change in place as
  // teams are made and destroyed, so the pointer stays valid from init to finalize.
  const TeamDescriptor* teams;
  int32_t max_teams;  // MORI_SHMEM_MAX_TEAMS
  uint32_t pad2;
  // [max_teams * team_scratch_bytes] symmetric staging of the device collectives: team index t
  // owns the team_scratch_bytes from team_scratch + t * team_scratch_bytes, the same offset in
  // the heap on every PE (mori/shmem/coll/ lays it out). MORI_SHMEM_TEAM_SCRATCH_SIZE.
  uint8_t* team_scratch;
  uint64_t team_scratch_bytes;
  // This PE's context pool (state/context.hpp): which QP indices belong to live contexts. In
  // memory both the host and the device update atomically (host-visible, coherent on the hip
  // backend), so that ctx_create from either side draws from one pool.
  ContextPool* contexts;
  // [n_pes] the transport of AMOs (shmem/atomic.hpp, locks, quiet and fence), as `transports`:
  // equal to it except where a PE's memory is also updated by NIC atomics that are not atomic
  // with respect to P2P ones (atomic_cap IBV_ATOMIC_HCA), where every PE, the owner included,
  // reaches that memory's AMOs over RDMA (runtime/amo_route.hpp, docs/device-api.md "Atomicity").
  const uint8_t* amo_transports;
};
static_assert(sizeof(GpuStates) == 160,
              "GpuStates is the runtime/device ABI: bump kGpuStatesAbiVersion");
static_assert(sizeof(void*) == 8, "GpuStates assumes 64-bit addresses on host and device");

}  // namespace mori::state

// Exactly one definition per code object. On the host backend it lives in libmori_shmem. On the hip
// backend each code object defines it once with MORI_SHMEM_DEFINE_GPU_STATES() (per translation
// unit without -fgpu-rdc), which also registers it so the runtime fills it; modules loaded later
// get it through module_init.
//
// The variable lives in namespace mori::shmem although its type is layer 3's: loaders find it by
// its mangled name, _ZN4mori5shmem15globalGpuStatesE (the device ABI spec, docs/bitcode.md), which
// a move would change.
//
// On amdgcn it is __constant__ (address space 4): the runtime writes it only between kernels, and
// loads from constant memory are invariant, so the compiler reads each field once per call, into
// scalar registers, instead of reloading it with vector loads after every atomic or fence
// (docs/benchmarks-history.md, "Executed paths"). It is protected there, as HIP makes every
// __device__ variable: still exported for the loaders, but known to be this code object's own, so
// it is addressed PC-relative instead of through a GOT entry that every access would load first.
#if defined(MORI_ON_HOST)
#define MORI_STATE_VISIBILITY __attribute__((visibility("default")))
namespace mori::shmem {
extern state::GpuStates globalGpuStates;
}  // namespace mori::shmem
#define MORI_SHMEM_DEFINE_GPU_STATES()
#elif defined(MORI_ON_AMDGCN)
extern "C" int mori_shmem_register_gpu_states(const void* host_symbol);
#define MORI_STATE_VISIBILITY __attribute__((visibility("protected")))
namespace mori::shmem {
extern MORI_STATE_VISIBILITY MORI_CONSTANT_VAR state::GpuStates globalGpuStates;
}  // namespace mori::shmem
#define MORI_SHMEM_DEFINE_GPU_STATES()                                      \
  namespace mori::shmem {                                                   \
  MORI_STATE_VISIBILITY MORI_CONSTANT_VAR state::GpuStates globalGpuStates; \
  [[maybe_unused]] static const int kGpuStatesRegistered =                  \
      mori_shmem_register_gpu_states(&globalGpuStates);                     \
  }                                                                         \
  static_assert(true, "")
#endif
