#!/usr/bin/env bash
# A sanitizer lane: builds the host backend under AddressSanitizer + UndefinedBehaviorSanitizer (asan) or
# ThreadSanitizer (tsan) from CMakePresets.json, then runs tests under it.
#
#   scripts/sanitize.sh asan|tsan              the CI set: the unit label (the verbs double included, the
#                                              emulated kernel's tests not; the
#                                              engine's wrap stress over mlx5 only),
#                                              then at 2 PEs over the software NIC the wrap stress
#                                              (mlx5) and the fault tests (every family);
#                                              asan adds the device suites over mlx5 (atomics and
#                                              locks, waits, device checks, RMA and strided RMA),
#                                              and at 2 PEs over P2P the host API, p/g and symmetric
#                                              registration
#   scripts/sanitize.sh asan|tsan --all        every unit, mpi, rdma and reliability test
#
# Suppressions (tests/sanitizers/*.supp) cover third-party libraries only, each with the reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lane=${1:?usage: scripts/sanitize.sh asan|tsan [--all]}
scope=${2:-ci}
build=$root/build-$lane
cd "$root"
cmake --preset "$lane" >/dev/null

supp=$root/tests/sanitizers
# LeakSanitizer needs the slow unwinder to see through Open MPI's frames (built without frame pointers), or it
# cannot match their leaks to the suppressions.
export ASAN_OPTIONS="fast_unwind_on_malloc=0:detect_stack_use_after_return=0:abort_on_error=0"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="suppressions=$supp/tsan.supp:halt_on_error=1:second_deadlock_stack=1"

# TSan looks for races, which the engine's wrap stress exercises hardest; it runs the stress over
# one family (the engine is the same code for all three; bnxt's and ionic's took 100 s each under
# TSan) and the fault paths of every family. ASan also runs the device suites over mlx5.
# Each lane builds only the MPI suites it runs.
if [ "$lane" = tsan ]; then
  suites=(rdma_stress device_wait device_checks)
else
  # Not device_signal and device_sync (the lane's two longest, 45-55 s each): they test ordering, which is
  # TSan's and the adversarial NIC's to find; the --all scope runs them. device_single runs over P2P below
  # (peers' mappings in this process); over the NIC its p/g are small puts and gets, which device_rma and
  # the wrap stress already post through the same engine.
  suites=(device_atomics device_wait device_checks device_rma rdma_stress)
fi
rdma="^mpi\\.rdma_(mlx5\\.($(IFS='|'; echo "${suites[*]}"))|(mlx5|bnxt|ionic)\\.rdma_faults)\\.np2\$"
# ASan also runs the host API suite and the P2P side of symmetric registration (peers' buffers mapped
# into this process) at 2 PEs.
p2p='^mpi\.(runtime|device_single)\.np2$'
binaries=()
[ "$lane" = asan ] && binaries=(mori_mpi_runtime mori_mpi_device_single)
if [ "$scope" = --all ]; then
  ninja -C "$build"
  ctest --test-dir "$build" -j "$(nproc)" --output-on-failure -L 'unit|mpi|rdma|reliability'
else
  ninja -C "$build" mori_unit_tests mori_verbs_double_tests mori_mpi_rdma_faults "${suites[@]/#/mori_mpi_}" \
    "${binaries[@]}"
  # The engine's 256-lane wrap stress runs over mlx5 only: the engine is one code for every family, and the
  # bnxt and ionic stress took 60-75 s each per lane; their short engine cases and codecs still run.
  # The emulated kernel's tests (label emulated_kernel) are left to the main lane: their shim is preloaded into
  # Debian's unsanitized ibv_devinfo and perftest, ahead of any sanitizer runtime, and this lane does not build it.
  ctest --test-dir "$build" -j "$(nproc)" --output-on-failure --no-tests=error -L unit -LE emulated_kernel \
    -E '^unit\.engine (bnxt|ionic): 256 lanes'
  ctest --test-dir "$build" --output-on-failure --no-tests=error -R "$rdma"
  if [ "$lane" = asan ]; then
    ctest --test-dir "$build" --output-on-failure --no-tests=error -R "$p2p"
  fi
fi
