#!/usr/bin/env bash
# The main job: install what is missing, build, then run the 2-PE example and the benchmark tables on the host
# backend.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MORI_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
# Only the programs below: the whole tree (device bitcode for each GPU arch, every test) is test.sh's.
"$root/scripts/build.sh" ring_put copy_bw runtime_bench put_latency put_bw
mpirun=(mpirun --oversubscribe --mca btl self,vader --bind-to none)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
echo "== 2-PE example: put_signal_nbi<Warp> around a ring =="
"${mpirun[@]}" -np 2 "$build/examples/ring_put"
echo "== copy<Scope> bandwidth against memcpy =="
"$build/bench/copy_bw"
echo "== runtime: init/finalize and malloc/free, 2 PEs =="
"${mpirun[@]}" -np 2 "$build/bench/runtime_bench" --reps 3 --pairs 1000
echo "== put + quiet latency and put bandwidth, 2 PEs over P2P, then over the software NIC (mlx5) =="
"${mpirun[@]}" -np 2 "$build/bench/put_latency" -b 8 -e 64K -f 8
"${mpirun[@]}" -np 2 "$build/bench/put_bw" -b 4K -e 4M -f 4
"${mpirun[@]}" -np 2 "$build/bench/put_bw" -b 8 -e 64K -f 8 --transport rdma
