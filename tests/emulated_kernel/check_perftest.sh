#!/usr/bin/env bash
# emulated_kernel.perftest_*: a perftest tool (Debian's, unmodified) as server and client, two
# processes on loopback, over one emulated ConnectX-7 (or the family MORI_EMU_PERFTEST_FAMILY names,
# its device MORI_EMU_PERFTEST_DEVICE): both exit 0 and the client prints its result line for
# `bytes` bytes and 100 iterations.
#   check_perftest.sh RUNNER TOOL PORT BYTES [ARGS...]
set -uo pipefail
run=$1 tool=$2 port=$3 bytes=$4
family=${MORI_EMU_PERFTEST_FAMILY:-mlx5} device=${MORI_EMU_PERFTEST_DEVICE:-mlx5_0}
shift 4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/pair.sh" <<PAIR
$tool -d $device -x 3 -n 100 -p $port $* >"$dir/server" 2>&1 &
server=\$!
# Until the server listens (its stdout is buffered, so its banner says nothing yet).
for i in \$(seq 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.05; done
timeout 30 $tool -d $device -x 3 -n 100 -p $port $* 127.0.0.1 >"$dir/client" 2>&1
client=\$?
wait \$server
server_rc=\$?
echo "client \$client server \$server_rc" >"$dir/rc"
PAIR
"$run" $family bash "$dir/pair.sh"
read -r _ client _ server <"$dir/rc"
line=$(grep -E "^ *$bytes +100[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+" "$dir/client")
if [[ $client -ne 0 || $server -ne 0 || -z $line ]]; then
  echo "$tool: client exited $client, server $server; result line: '${line}'"
  echo "--- client:"; cat "$dir/client"; echo "--- server:"; cat "$dir/server"
  exit 1
fi
echo "$tool over the emulated $device: $line"
