// Backend selection and the attribute macros every device header uses.
//
// This file and its siblings in platform/ are the only code that knows which backend it is
// compiled for:
//   - clang in HIP mode (`-x hip`, both the device and the host pass): the amdgcn backend. Device
//     functions carry clang's `device` attribute and are only code-generated for amdgcn.
//   - any other compiler pass with MORI_BACKEND_HOST: the host backend, where device code runs on
//     CPU threads.
// HIP's own names (__device__, __global__, threadIdx, warpSize, ...) are never defined here, so
// users can include <hip/hip_runtime.h> and <mori/shmem.hpp> in either order.
#pragma once

#if defined(__HIP__)
#define MORI_ON_AMDGCN 1
// Release GPU builds force every device function inline (as CUDA libraries' __forceinline__): an
// entry point of the device API then makes no calls, and a call, even on a path never taken, costs
// register saves to scratch around it. Checked builds keep the compiler's choice: their failure
// messages would be inlined everywhere.
#if defined(NDEBUG) && !(defined(MORI_DEVICE_CHECKS) && MORI_DEVICE_CHECKS)
#define MORI_DEVICE __attribute__((device)) inline __attribute__((always_inline))
#else
#define MORI_DEVICE __attribute__((device)) inline
#endif
#define MORI_DEVICE_NOINLINE __attribute__((device)) inline __attribute__((noinline))
#define MORI_DEVICE_VAR __attribute__((device))
#define MORI_CONSTANT_VAR __attribute__((constant))
#define MORI_KERNEL extern "C" __attribute__((global))
#if defined(__HIP_DEVICE_COMPILE__)
// Code generation for amdgcn is under way (not the host pass of a HIP file).
#define MORI_DEVICE_PASS 1
#endif
#elif defined(MORI_BACKEND_HOST)
#define MORI_ON_HOST 1
#define MORI_DEVICE inline
#define MORI_DEVICE_NOINLINE inline __attribute__((noinline))
#define MORI_DEVICE_VAR
#define MORI_CONSTANT_VAR
#define MORI_KERNEL extern "C"
#define MORI_DEVICE_PASS 1  // device code is ordinary host code on this backend
#elif defined(MORI_BACKEND_HIP)
// Plain C++ host code of a hip-backend build (the runtime, users' host files): the shared types are
// usable, device functions are not (platform.hpp refuses). MORI_DEVICE is plain inline so that
// headers that need nothing of platform.hpp, the providers' hardware layouts (provider/*_defs.hpp,
// endian.hpp), compile here too: the runtime sizes its queues from them.
#define MORI_HOST_SIDE_ONLY 1
#define MORI_DEVICE inline
#define MORI_DEVICE_VAR
#define MORI_CONSTANT_VAR
#else
#error "mori headers need clang -x hip, or MORI_BACKEND_HOST / MORI_BACKEND_HIP (mori::device)"
#endif

// Device-side argument checks: compiled in on the host backend and in debug GPU builds, out of
// release GPU builds.
#if !defined(MORI_DEVICE_CHECKS)
#if defined(MORI_ON_HOST) || !defined(NDEBUG)
#define MORI_DEVICE_CHECKS 1
#else
#define MORI_DEVICE_CHECKS 0
#endif
#endif

// The failure paths of device calls (state::fail and what feeds it). In release GPU builds a
// failure only records a few words and traps, and it is forced inline: an out-of-line call, even
// on a path never taken, makes the caller save registers to scratch around it. Where failures are
// described (checks on, the host) the message code is too big to inline everywhere.
#if defined(MORI_ON_AMDGCN) && !MORI_DEVICE_CHECKS
#define MORI_COLD_INLINE __attribute__((always_inline))
#else
#define MORI_COLD_INLINE
#endif

// Tells the compiler a fact the runtime guarantees, so that checks it implies fold away. Only
// clang's optimizer takes it (__builtin_assume evaluates nothing); elsewhere it is dropped and the
// checks stay.
#if defined(__clang__)
#define MORI_ASSUME(fact) __builtin_assume(fact)
#else
#define MORI_ASSUME(fact) ((void)0)
#endif

// Before a loop whose body must stay one copy (a loop of two passes that share inlined code):
// clang's full unroll would otherwise duplicate it. GCC (the host backend) has its own spelling.
#if defined(__clang__)
#define MORI_NO_UNROLL _Pragma("clang loop unroll(disable)")
#elif defined(__GNUC__)
#define MORI_NO_UNROLL _Pragma("GCC unroll 1")
#else
#define MORI_NO_UNROLL
#endif

// Before a host-backend function whose loop should use the CPU's widest vectors, as glibc's own
// memcpy does: GCC compiles it twice, for AVX2 and for the x86-64 baseline (SSE2), and picks one
// at load time (target_clones, an ifunc). The host's reductions are held to memcpy's speed
// (bench/coll_bench.cpp), and a combine in SSE2 against a memcpy in AVX2 lost by itself: at 2 MiB
// on 2 PEs, 0.47-0.54 of the memcpy bound against 0.71-0.74 with AVX2, interleaved runs. Not under
// clang (no clones of templates), the sanitizers (their builds stay as they were) or amdgcn.
#if defined(MORI_ON_HOST) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define MORI_HOST_WIDE_VECTORS __attribute__((target_clones("avx2", "default")))
#else
#define MORI_HOST_WIDE_VECTORS
#endif

#define MORI_STRINGIFY_(x) #x
#define MORI_STRINGIFY(x) MORI_STRINGIFY_(x)
