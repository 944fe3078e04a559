#!/usr/bin/env bash
# A sanitizer lane: builds the host backend under AddressSanitizer + UndefinedBehaviorSanitizer (asan) or
# ThreadSanitizer (tsan) from CMakePresets.json, then runs tests under it.
#
#   scripts/sanitize.sh asan|tsan              the CI set: the unit label, the RDMA tests over the mlx5 software
#                                              NIC (stress, faults, atomics, signals, fence, waits, device
#                                              checks) and the stress and fault tests over bnxt and ionic, 2 PEs
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

rdma='^mpi\.rdma_(mlx5\.(device_atomics|device_signal|device_sync|device_wait|device_checks)|(mlx5|bnxt|ionic)\.(rdma_stress|rdma_faults))\.np2$'
if [ "$scope" = --all ]; then
  ninja -C "$build"
  ctest --test-dir "$build" -j "$(nproc)" --output-on-failure -L 'unit|mpi|rdma|reliability'
else
  ninja -C "$build" mori_unit_tests mori_mpi_rdma_stress mori_mpi_rdma_faults mori_mpi_device_atomics \
    mori_mpi_device_signal mori_mpi_device_sync mori_mpi_device_wait mori_mpi_device_checks
  ctest --test-dir "$build" -j "$(nproc)" --output-on-failure -L unit
  ctest --test-dir "$build" --output-on-failure -R "$rdma"
fi
