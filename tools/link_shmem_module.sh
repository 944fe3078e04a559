#!/usr/bin/env bash
# Links kernels (LLVM IR text or bitcode) with mori's device bitcode into a loadable module: the
# recipe docs/bitcode.md describes for front ends.
#
#   tools/link_shmem_module.sh <libdir> <target> <out> [<kernel.ll|.bc>...]
#
# libdir holds the output of build_shmem_bitcode.sh. target is an AMDGPU arch (gfx942, gfx90a: out
# is a code object for hipModuleLoad) or host (out is a shared object for dlopen, run with
# mori::host::launch). Without kernels the module is the whole library: every ABI function,
# callable through dlsym (host) or as a device function (GPU). The target's own LLVM links it
# (tools/device_toolchain.sh: LLVM 22 for gfx950, whose bitcode LLVM 19 cannot read; LLVM_SUFFIX,
# default -19, for the others).
set -euo pipefail

[ $# -ge 3 ] || {
  echo "usage: $0 <libdir> <target> <out> [<kernel.ll|.bc>...]" >&2
  exit 2
}
libdir=$1 target=$2 out=$3
shift 3
. "$(dirname "$0")/device_toolchain.sh"
sfx=$(mori_llvm_suffix "$target")
if [ "$target" = host ]; then
  bitcode=$libdir/libmori_shmem_device_host.bc
else
  bitcode=$libdir/libmori_shmem_device_$target.bc
fi
[ -f "$bitcode" ] || {
  echo "link_shmem_module: no $bitcode (run tools/build_shmem_bitcode.sh)" >&2
  exit 1
}

kernels=$out.kernels.bc linked=$out.linked.bc
trap 'rm -f "$kernels" "$linked"' EXIT
# --only-needed takes from the library just what the kernels call (it applies to every file after
# the first, hence two steps). On amdgcn --internalize then makes those functions private to the
# code object, so calls are direct and may be inlined; the device state and its ABI version stay
# exported because the bitcode marks them used. The host module keeps them preemptible (below).
if [ $# -eq 0 ]; then
  cp "$bitcode" "$linked"
else
  "llvm-link$sfx" "$@" -o "$kernels"
  internalize=--internalize
  [ "$target" != host ] || internalize=
  "llvm-link$sfx" --only-needed $internalize "$kernels" "$bitcode" -o "$linked"
fi

if [ "$target" = host ]; then
  # -Bsymbolic-non-weak: the module's own strong definitions (its globalGpuStates, the mori_shmem_*
  # functions) bind inside the module, as in a GPU code object, so module_init's copy is the state
  # its code reads. Weak ones (C++ inline variables such as the launcher's thread-local context, and
  # libstdc++'s atomic-wait pool) stay preemptible and resolve to libmori_shmem's at dlopen, so the
  # module sees the lanes and barriers of the launch that runs it.
  "clang++$sfx" -shared -fPIC -O2 -fuse-ld=lld -Wl,-Bsymbolic-non-weak "$linked" -o "$out"
else
  "clang$sfx" --target=amdgcn-amd-amdhsa -mcpu="$target" -nogpulib -O2 "$linked" -o "$out"
fi
