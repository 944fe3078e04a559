#!/usr/bin/env bash
# Builds mori's extern "C" device ABI (src/abi) as LLVM bitcode for kernels written in MLIR, LLVM
# IR, Triton or FlyDSL (docs/bitcode.md), and refuses to leave a bitcode behind that fails its
# checks.
#
#   tools/build_shmem_bitcode.sh [outdir] [arch]
#
# arch is gfx942 by default; a list separated by ',' or ';' builds several. outdir (default: the
# repository root) receives in lib/:
#   libmori_shmem_device_<arch>.bc  amdgcn bitcode, one per arch
#   libmori_shmem_device.bc         the first arch's, under the name front ends already link
#   libmori_shmem_device_host.bc    the host backend's flavour, for modules that mori::host::launch
#                                   runs
#   mori_shmem_device_abi.json      the manifest: every function's name, signature and scope
#
# Each arch is compiled and checked by its own LLVM (tools/device_toolchain.sh): clang-19 and the
# LLVM 19 tools for gfx942 and gfx90a, clang-22 and the LLVM 22 tools for gfx950, which clang-19
# does not know. LLVM 19 cannot read a bitcode LLVM 22 wrote (docs/bitcode.md, "Which LLVM reads
# which bitcode").
#
# Environment: MORI_DEVICE_CXX (default clang++-19) and LLVM_SUFFIX (default -19, for llvm-dis,
# llvm-as, llvm-nm and opt) for the LLVM 19 archs and the host flavour, MORI_DEVICE_CXX_22 (default
# clang++-22) and LLVM_SUFFIX_GFX950 (default -22) for gfx950, MORI_ABI_MANIFEST_TOOL (a built
# mori_abi_manifest; otherwise compiled here), MORI_BITCODE_HOST=0 (leave the host flavour out: the
# ISA checks, which read amdgcn only), MORI_BITCODE_ARCH_ONLY=1 (publish only the arch bitcodes: no
# host flavour, no manifest, no libmori_shmem_device.bc; the CMake build runs one such job per arch
# after the first, in parallel),
# MORI_ABI_FUNCTIONS (names separated by spaces or commas, with or without mori_shmem_: compile only
# those wrappers, for the ISA checks; the manifest stays whole, the checks cover the names given).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
outdir=${1:-$root}
mkdir -p "$outdir/lib"
outdir=$(cd "$outdir" && pwd)
IFS=',;' read -r -a archs <<<"${2:-gfx942}"
. "$root/tools/device_toolchain.sh"
arch_only=${MORI_BITCODE_ARCH_ONLY:-0}
host=${MORI_BITCODE_HOST:-1}
[ "$arch_only" = 0 ] || host=0
# The LLVM 19 tools build the manifest tool and the host flavour; each arch's own build its bitcode.
sfx=$(mori_llvm_suffix host)
cxx=$(mori_device_cxx host)

die() {
  echo "build_shmem_bitcode: $*" >&2
  exit 1
}
[ ${#archs[@]} -gt 0 ] || die "no arch given"
for arch in host "${archs[@]}"; do
  s=$(mori_llvm_suffix "$arch")
  for tool in "$(mori_device_cxx "$arch")" "llvm-dis$s" "llvm-as$s" "llvm-nm$s" "opt$s"; do
    command -v "$tool" >/dev/null || die "$tool not found for $arch (scripts/install-deps.sh installs it)"
  done
done

work=$(mktemp -d "$outdir/lib/.bitcode.XXXXXX")
trap 'rm -rf "$work"' EXIT

# ---- the manifest, from the same list as the wrappers -------------------------------------------
manifest_tool=${MORI_ABI_MANIFEST_TOOL:-}
if [ -z "$manifest_tool" ]; then
  manifest_tool=$work/mori_abi_manifest
  # MORI_BACKEND_HIP without -x hip: the shared types only, no device code.
  "$cxx" -std=c++20 -O1 -DMORI_BACKEND_HIP=1 -I"$root/include" -I"$root/src" \
    "$root/tools/abi_manifest.cpp" -o "$manifest_tool"
fi
"$manifest_tool" -o "$work/mori_shmem_device_abi.json"
"$manifest_tool" --names | LC_ALL=C sort >"$work/names"

# ---- a subset: only the wrappers named in MORI_ABI_FUNCTIONS (src/abi/device_abi.cpp) ------------
subset=()
if [ -n "${MORI_ABI_FUNCTIONS:-}" ]; then
  : >"$work/subset.hpp"
  : >"$work/subset_names"
  for name in ${MORI_ABI_FUNCTIONS//,/ }; do
    name=mori_shmem_${name#mori_shmem_}
    grep -qx "$name" "$work/names" || die "MORI_ABI_FUNCTIONS: $name is not in the manifest"
    echo "#define MORI_ABI_KEEP_${name#mori_shmem_} ~, 1" >>"$work/subset.hpp"
    echo "$name" >>"$work/subset_names"
  done
  LC_ALL=C sort -u "$work/subset_names" -o "$work/names"
  subset=("-DMORI_ABI_SUBSET=\"$work/subset.hpp\"")
fi

# ---- compile ------------------------------------------------------------------------------------
# Release device code (-DNDEBUG compiles the device checks out on amdgcn); every ABI symbol is
# default visibility so that kernels linked with it, and the loaders, can see it.
# MORI_BITCODE_DEFINES: extra -D flags, e.g. the NIC families (-DMORI_RDMA_BNXT=0 ...).
read -r -a extra_defines <<<"${MORI_BITCODE_DEFINES:-}"
common=("${extra_defines[@]}" "${subset[@]}" -std=c++20 -O2 -DNDEBUG -fvisibility=default -Xclang -disable-lifetime-markers
  -Wall -Wextra -I"$root/include" -I"$root/src" -emit-llvm -c "$root/src/abi/device_abi.cpp")

# -disable-lifetime-markers stops clang emitting them, but the inliner adds its own. Front ends link
# the bitcode with their own LLVM, whose lifetime intrinsics may differ (LLVM 21 dropped the size
# operand), so none may remain: each is a whole `call void` line of the IR, safe to drop.
#
# The SGPR limit (amdgcn; MORI_BITCODE_SGPR_LIMIT, default 38, 0 for none). A callable function
# saves every callee-saved SGPR (s34 up) it uses in its prologue and restores it before returning,
# on every call: a wrapper whose RDMA path needs 60 SGPRs paid 59 instructions for them on its P2P
# path too. "amdgpu-num-sgpr" (LLVM's AMDGPUUsage; clang admits it on kernels only, so it is added
# to the IR here) keeps the allocator below s38: the registers a rare path needs beyond that are
# spilled to VGPR lanes on that path. docs/benchmarks-history.md, "Executed paths", has the measurements.
# The families that loop over PEs with a transport dispatch in the loop (barrier, sync, locks,
# collectives) keep a mask per exit of their loop body live across iterations and spill it every
# iteration under the limit, so they keep the default. Kernels that inline a wrapper drop the
# attribute with the call: only calls pay either way.
sgpr_limit=${MORI_BITCODE_SGPR_LIMIT:-38}
sgpr_exempt='@mori_shmem_(([a-z0-9_]*_)?(barrier|sync|broadcastmem|collectmem|alltoallmem|reduce)|(set|clear|test)_lock)'
strip_lifetime() { # <in.bc> <out.bc> <amdgcn|host>
  local limit=()
  if [ "$3" = amdgcn ] && [ "$sgpr_limit" != 0 ]; then
    limit=(-e "/^define .*@mori_shmem_/{/$sgpr_exempt/!s/ #([0-9]+) \{\$/ #\1 \"amdgpu-num-sgpr\"=\"$sgpr_limit\" {/}")
  fi
  "llvm-dis$sfx" "$1" -o - |
    sed -E -e '/^[[:space:]]*(tail |notail |musttail )?call void @llvm\.lifetime\.(start|end)\./d' \
      "${limit[@]}" |
    "llvm-as$sfx" -o "$1.nolife"
  "opt$sfx" -passes=strip-dead-prototypes "$1.nolife" -o "$2"
}

# ---- check --------------------------------------------------------------------------------------
check() { # <bc> <amdgcn|host>
  local bc=$1 kind=$2 ir defined missing bad
  ir=$("llvm-dis$sfx" "$bc" -o -)
  defined=$("llvm-nm$sfx" --defined-only "$bc")
  ! grep -q '@llvm\.lifetime' <<<"$ir" || die "$bc: llvm.lifetime intrinsics remain"
  missing=$(LC_ALL=C comm -23 "$work/names" \
    <(awk '$2 == "T" {print $3}' <<<"$defined" | LC_ALL=C sort))
  [ -z "$missing" ] || die "$bc: manifest functions not defined:"$'\n'"$missing"
  local hidden='\b(hidden|protected|internal|private)\b'
  bad=$(grep -E "^define [^@]*$hidden[^@]*@mori_shmem_" <<<"$ir" || true)
  [ -z "$bad" ] || die "$bc: ABI functions without default visibility:"$'\n'"$bad"
  for sym in _ZN4mori5shmem15globalGpuStatesE mori_shmem_gpu_states_abi_version; do
    grep -qE " [DR] $sym\$" <<<"$defined" || die "$bc: $sym is not defined"
    bad=$(grep -E "^@$sym = " <<<"$ir" | grep -E '\b(hidden|internal|private)\b' || true)
    [ -z "$bad" ] || die "$bc: $sym is not default visibility: $bad"
  done
  if [ "$kind" = amdgcn ] && [ "$sgpr_limit" != 0 ]; then
    # Every wrapper but the exempt families carries the SGPR limit, and only those.
    bad=$(awk -v limit="\"amdgpu-num-sgpr\"=\"$sgpr_limit\"" -v exempt="${sgpr_exempt#@}" '
      /^define / && match($0, /@mori_shmem_[a-z0-9_]+/) {
        name = substr($0, RSTART + 1, RLENGTH - 1)
        match($0, /#[0-9]+ \{$/)
        group[name] = substr($0, RSTART, RLENGTH - 2)
      }
      /^attributes #/ { limited[$2] = index($0, limit) > 0 }
      END {
        for (n in group)
          if ((n ~ "^" exempt) == limited[group[n]]) print n
      }' <<<"$ir")
    [ -z "$bad" ] || die "$bc: SGPR limit missing on a wrapper, or set on an exempt one:"$'\n'"$bad"
  fi
  if [ "$kind" = amdgcn ]; then
    # A code object cannot resolve anything at load time: everything but intrinsics is defined.
    bad=$("llvm-nm$sfx" --undefined-only "$bc" | awk '{print $NF}' | grep -v '^llvm\.' || true)
    [ -z "$bad" ] || die "$bc: undefined external symbols:"$'\n'"$bad"
  else
    # The host flavour may call libstdc++ and libc, never a mori symbol it forgot to define.
    bad=$("llvm-nm$sfx" --undefined-only "$bc" | awk '{print $NF}' | grep -i mori || true)
    [ -z "$bad" ] || die "$bc: undefined mori symbols:"$'\n'"$bad"
  fi
}

build() { # <name> <arch|host> <flags...>: compiled, stripped and checked by the LLVM of <arch>
  local name=$1 target=$2 kind=amdgcn
  shift 2
  [ "$target" != host ] || kind=host
  sfx=$(mori_llvm_suffix "$target")
  echo "build_shmem_bitcode: $name"
  "$(mori_device_cxx "$target")" "$@" "${common[@]}" -o "$work/$name.raw.bc"
  strip_lifetime "$work/$name.raw.bc" "$work/$name.bc" "$kind"
  check "$work/$name.bc" "$kind"
}

# Code object version 5 on every arch (clang-19's default; clang-22's is 6): the module flag
# amdhsa_code_object_version must match between the bitcode and the kernels linked with it, so every
# arch's bitcode carries the same one (docs/bitcode.md, "Linking").
for arch in "${archs[@]}"; do
  build "libmori_shmem_device_$arch" "$arch" -x hip --offload-arch="$arch" -nogpuinc -nogpulib \
    --offload-device-only -fgpu-rdc -mcode-object-version=5
done
if [ "$host" != 0 ]; then
  build libmori_shmem_device_host host -DMORI_BACKEND_HOST=1 -fPIC
fi

# ---- publish, only once everything passed --------------------------------------------------------
for arch in "${archs[@]}"; do
  mv "$work/libmori_shmem_device_$arch.bc" "$outdir/lib/"
done
if [ "$arch_only" = 0 ]; then
  cp "$outdir/lib/libmori_shmem_device_${archs[0]}.bc" "$outdir/lib/libmori_shmem_device.bc"
  mv "$work/mori_shmem_device_abi.json" "$outdir/lib/"
fi
[ "$host" = 0 ] || mv "$work/libmori_shmem_device_host.bc" "$outdir/lib/"
echo "build_shmem_bitcode: $(wc -l <"$work/names") functions, in $outdir/lib"
