// The extern "C" device ABI: one wrapper per entry of functions.def, over the device API. Compiled
// only into bitcode by tools/build_shmem_bitcode.sh: for amdgcn (-x hip, device only) and, with
// MORI_BACKEND_HOST, for the host backend's modules. Front ends link that bitcode into their
// kernels; docs/bitcode.md describes the flow.
#include <cstddef>
#include <cstdint>

#include "abi/adapters.hpp"
#include "mori/core/types.hpp"
#include "mori/shmem/device_api.hpp"

// Every code object that links the bitcode gets exactly one device state
// (mori/state/gpu_states.hpp), which module_init finds by name (hipModuleGetGlobal / dlsym) and
// fills, and the ABI version it checks first. Both are exported so that the loaders see them: the
// version with default visibility, the state with MORI_STATE_VISIBILITY (protected on amdgcn, as
// HIP gives every __device__ variable: exported, yet addressed PC-relative without a GOT load).
// Both are `used, retain` (llvm.used) so that a front end that links only what its kernels need
// and internalizes the rest (llvm-link --only-needed --internalize) still keeps them, exported.
// The registration of MORI_SHMEM_DEFINE_GPU_STATES is not wanted here: modules are filled by
// module_init, never by the runtime's static registration.
namespace mori::shmem {
MORI_CONSTANT_VAR MORI_STATE_VISIBILITY __attribute__((used, retain)) GpuStates globalGpuStates;
}  // namespace mori::shmem
extern "C" MORI_DEVICE_VAR __attribute__((visibility("default"), used, retain))
const uint32_t mori_shmem_gpu_states_abi_version = mori::state::kGpuStatesAbiVersion;

// MORI_DEVICE_VAR is the device attribute without `inline`: these are real, exported definitions.
// On amdgcn each wrapper is flattened: everything it calls is inlined into it, so an entry point
// makes no calls (a call, even on a path never taken, costs register saves to scratch, and the
// device ABI's callers expect leaf functions, as with NVSHMEM's bitcode).
#if defined(MORI_ON_AMDGCN)
#define MORI_ABI_FLATTEN __attribute__((flatten))
#else
#define MORI_ABI_FLATTEN
#endif
#define MORI_ABI_EXPORT \
  extern "C" MORI_DEVICE_VAR __attribute__((visibility("default"))) MORI_ABI_FLATTEN

// A subset build defines only some wrappers: MORI_ABI_SUBSET names a header of lines
// `#define MORI_ABI_KEEP_<name> ~, 1` (tools/build_shmem_bitcode.sh writes it from
// MORI_ABI_FUNCTIONS). The ISA checks compile the dozen entry points they read, not all of them:
// the whole ABI is minutes of compile per configuration. MORI_ABI_KEPT(name) is 1 for a kept name
// (the pasted macro expands to two arguments, shifting the 1 into second place) and 0 otherwise.
#if defined(MORI_ABI_SUBSET)
#include MORI_ABI_SUBSET
#define MORI_ABI_SECOND_(first, second, ...) second
#define MORI_ABI_SECOND(...) MORI_ABI_SECOND_(__VA_ARGS__)
#define MORI_ABI_KEPT(name) MORI_ABI_SECOND(MORI_ABI_KEEP_##name, 0, ~)
#else
#define MORI_ABI_KEPT(name) 1
#endif
#define MORI_ABI_WHEN_1(...) __VA_ARGS__
#define MORI_ABI_WHEN_0(...)
#define MORI_ABI_WHEN_(kept) MORI_ABI_WHEN_##kept
#define MORI_ABI_WHEN(kept) MORI_ABI_WHEN_(kept)

#define MORI_ABI_FAMILY(name)
#define MORI_ABI_P(type, name) type name
#define MORI_ABI_STATUS(name, scope, params, call)                                  \
  MORI_ABI_WHEN(MORI_ABI_KEPT(name))(MORI_ABI_EXPORT int mori_shmem_##name params { \
    call;                                                                           \
    return 0;                                                                       \
  })
#define MORI_ABI_VALUE(ret, name, scope, params, call) \
  MORI_ABI_WHEN(MORI_ABI_KEPT(name))(MORI_ABI_EXPORT ret mori_shmem_##name params { return call; })

namespace mori::shmem {
#include "abi/functions.def"
}  // namespace mori::shmem
