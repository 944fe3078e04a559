#!/usr/bin/env bash
# Instructions executed per posted work request, per provider and operation: runs rdma_post under
# callgrind with collection limited to RdmaEngine<...>::post_n (post's body, and what it calls: flow control, CQ
# polling, the provider's WQE writer and doorbell), and divides by the number of requests.
#   bench/callgrind_post.sh [build dir] [iterations]
set -euo pipefail
build=${1:-build}
iters=${2:-20000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-8s %-8s %10s %16s\n' provider op requests instr/request
for provider in mlx5 bnxt ionic; do
  for op in inline write atomic; do
    valgrind --tool=callgrind --callgrind-out-file="$tmp/out" \
      --toggle-collect='*RdmaEngine<*>::post_n<*' \
      "$build/bench/rdma_post" --iters "$iters" --provider "$provider" --op "$op" >/dev/null 2>"$tmp/log"
    total=$(grep -E '^summary:' "$tmp/out" | awk '{print $2}')
    printf '%-8s %-8s %10d %16.1f\n' "$provider" "$op" "$iters" "$(echo "$total / $iters" | bc -l)"
  done
done
