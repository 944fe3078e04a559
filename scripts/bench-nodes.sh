#!/usr/bin/env bash
# The shmem benchmarks between two nodes: two network namespaces of one PE each (scripts/netns.sh), the
# PEs' software NICs talking RoCEv2 over the veths and the bridge. In the same run, the bound: what the veth path
# carries between the two namespaces (build/bench/veth_bw: UDP datagrams of a 1024 B path-MTU packet's size, and
# the round trip of a small one). Prints a perftest-style table with the bound beside each figure.
#
#   scripts/bench-nodes.sh [--json] [--quick] [--providers "mlx5 bnxt ionic"]
#
#   --json       the programs' JSON lines (veth_rtt, veth_bw, then each benchmark's) instead of the table
#   --quick      tiny sizes and few iterations (a smoke test: every program once across the nodes)
#   --providers  NIC families to run (MORI_DEVICE_NIC), default mlx5
# Environment: MORI_BUILD_DIR (default build), MORI_BENCH_PREFIX (the namespaces' prefix, default mori-bench). The
# namespaces are removed on exit, also on failure. Needs root (scripts/netns.sh check says what is missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MORI_BUILD_DIR:-$root/build}
prefix=${MORI_BENCH_PREFIX:-mori-bench}
netns=$root/scripts/netns.sh
json=0 quick=0 providers=mlx5
while [ $# -gt 0 ]; do
  case "$1" in
    --json) json=1 ;;
    --quick) quick=1 ;;
    --providers) providers=${2:?--providers needs a list}; shift ;;
    *) sed -n '7,12p' "$0" >&2; exit 2 ;;
  esac
  shift
done
for program in veth_bw put_latency get_latency atomic_latency put_bw get_bw; do
  [ -x "$build/bench/$program" ] || { echo "bench-nodes.sh: no $build/bench/$program (build it)" >&2; exit 1; }
done

"$netns" check
out=$(mktemp -d)
cleanup() {
  "$netns" down "$prefix" || true
  rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$netns" down "$prefix"  # what an earlier run that was killed outright left
"$netns" up "$prefix" 2 1

if [ $quick -eq 1 ]; then
  veth=(--seconds 0.2 --pings 200)
  lat=(-b 8 -e 1K -f 128 --iters 20 --warmup 2 --reps 1)
  amo=(--iters 20 --warmup 2 --reps 1)
  bw=(-b 4K -e 64K -f 16 --iters 8 --warmup 1 --reps 1)
else
  veth=(--seconds 1 --pings 20000)
  lat=(-b 8 -e 4K -f 8 --iters 2000 --warmup 100 --reps 3)
  amo=(--iters 2000 --warmup 100 --reps 3)
  bw=(-b 4K -e 256K -f 8 --iters 200 --warmup 10 --reps 3)
fi
"$build/bench/veth_bw" --ns-a "${prefix}0" --ns-b "${prefix}1" "${veth[@]}" --json >"$out/veth.json"

# shellcheck disable=SC2054  # "self,vader" is one argument
mpirun=(mpirun --oversubscribe --mca btl self,vader --bind-to none -np 2)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
export MORI_TEST_NETNS=$prefix MORI_TEST_PES_PER_NODE=1
export MORI_SHMEM_BOOTSTRAP_TIMEOUT=${MORI_SHMEM_BOOTSTRAP_TIMEOUT:-20}
export MORI_SHMEM_TIMEOUT_MS=${MORI_SHMEM_TIMEOUT_MS:-20000}
for provider in $providers; do
  for program in put_latency get_latency atomic_latency put_bw get_bw; do
    case "$program" in
      atomic_latency) args=("${amo[@]}") ;;
      *_bw) args=("${bw[@]}") ;;
      *) args=("${lat[@]}") ;;
    esac
    "${mpirun[@]}" "$build/bench/$program" "${args[@]}" --transport rdma --provider "$provider" --json \
      >>"$out/bench.json"
  done
done

if [ $json -eq 1 ]; then
  cat "$out/veth.json" "$out/bench.json"
  exit 0
fi
python3 - "$out/veth.json" "$out/bench.json" <<'EOF'
import json, sys
veth = {r["bench"]: r for r in map(json.loads, open(sys.argv[1]))}
rows = [json.loads(line) for line in open(sys.argv[2]) if line.startswith("{")]
rtt, bw = veth["veth_rtt"], veth["veth_bw"]
bound = bw["rdma_payload_mbps"]
print(f"# 2 nodes x 1 PE (network namespaces), the software NIC on the wire (RoCEv2 over veth), host backend")
print(f"# bound, same run: UDP round trip of {rtt['bytes']} B {rtt['rtt_us']:.1f} us (median of {rtt['pings']}; "
      f"min {rtt['rtt_min_us']:.1f}); {bw['payload']} B datagrams {bw['dgrams_per_s']:.0f}/s = {bound:.1f} MB/s "
      f"as 1024 B RDMA payloads ({100 * bw['lost_fraction']:.1f}% of those sent lost)")
print(f"{'#bench':<16} {'NIC':<6} {'bytes':>8} {'t_typical[us]':>14} {'t_min[us]':>10} {'t_max[us]':>10} "
      f"{'UDP RTT[us]':>12} {'/RTT':>6}")
for r in rows:
    if r["bench"].endswith("latency"):
        print(f"{r['bench']:<16} {r['provider']:<6} {r['size']:>8} {r['lat_us']:>14.2f} {r['min']:>10.2f} "
              f"{r['max']:>10.2f} {rtt['rtt_us']:>12.1f} {r['lat_us'] / rtt['rtt_us']:>6.1f}")
print(f"{'#bench':<16} {'NIC':<6} {'bytes':>8} {'BW avg[MB/s]':>14} {'min':>10} {'max':>10} "
      f"{'veth[MB/s]':>12} {'/veth':>6}")
for r in rows:
    if r["bench"].endswith("_bw"):
        mbps = 1e3 * r["gbps"]
        print(f"{r['bench']:<16} {r['provider']:<6} {r['size']:>8} {mbps:>14.1f} {1e3 * r['min']:>10.1f} "
              f"{1e3 * r['max']:>10.1f} {bound:>12.1f} {mbps / bound:>6.2f}")
missing = [r["bench"] for r in rows if not r.get("between_nodes")]
if missing:
    sys.exit(f"bench-nodes.sh: not between two nodes: {', '.join(sorted(set(missing)))}")
EOF
