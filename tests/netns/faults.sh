# shellcheck shell=bash
# faults.sh: shell functions that make the nodes' wire (scripts/netns.sh) misbehave, for the netns.fault_* tests
# (fault_case.sh sources it). The kernel here has no sch_netem, so:
#   loss                 nftables in each node namespace: an output chain that drops UDP port 4791 datagrams with
#                        `numgen random mod 100 < P` (the kernel's own random numbers), counting what it drops and
#                        what it passes
#   delay with jitter,   wire_switch (tests/netns/wire_switch.cpp) in the bridge namespace: the nics' bridge-side
#   reordering,          veth ends leave br0 and the switch forwards between them (eth0, the bootstrap's
#   duplication          interface, stays on br0, unimpaired)
#   a link down or up    ip -n <node> link set nic<pe> down|up: the software NIC's sends fail (ENETDOWN), which it
#                        counts as lost datagrams, and nothing arrives
# Every function takes the prefix of the nodes first.

# nft_loss <prefix> <percent>: every node drops <percent>% of the RoCE datagrams it sends.
fault_nft_loss() {
  local prefix=$1 percent=$2 ns
  fault_nft_clear "$prefix"
  for ns in $(fault_nodes "$prefix"); do
    ip netns exec "$ns" nft -f - <<EOF || return 1
table inet mori_fault {
  chain out {
    type filter hook output priority 0; policy accept;
    udp dport 4791 numgen random mod 100 < $percent counter drop
    udp dport 4791 counter
  }
}
EOF
  done
}

# nft_counts <prefix>: one line a node, "<node>: dropped <n> of <m> RoCE datagrams sent".
fault_nft_counts() {
  local prefix=$1 ns
  for ns in $(fault_nodes "$prefix"); do
    ip netns exec "$ns" nft list table inet mori_fault 2>/dev/null |
      awk -v ns="$ns" '/counter packets/ { for (i = 1; i < NF; i++) if ($i == "packets") n = $(i + 1)
                                           if (/drop/) dropped += n; else passed += n }
                       END { printf "%s: nft dropped %d of %d RoCE datagrams sent\n", ns, dropped, dropped + passed }'
  done
}

fault_nft_clear() {
  local prefix=$1 ns
  for ns in $(fault_nodes "$prefix"); do
    ip netns exec "$ns" nft delete table inet mori_fault 2>/dev/null || true
  done
}

# The node namespaces of a prefix: <prefix><i>.
fault_nodes() {
  local prefix=$1
  ip netns list | awk '{print $1}' | grep -E "^${prefix}[0-9]+\$" | sort
}

# The bridge-side veth ends of the nics (netns.sh names them "<prefix><node>n<pe>" or "v<node>n<pe>").
fault_nic_ports() {
  local prefix=$1
  ip -n "$prefix-br" -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' | grep -E '[0-9]n[0-9]+$' | sort
}

# switch_start <prefix> <wire_switch> <log> <switch options...>: the nics' ports leave br0 for the switch; prints the
# switch's pid once its ports are open.
fault_switch_start() {
  local prefix=$1 bin=$2 log=$3 ports port ready i pid
  shift 3
  ports=$(fault_nic_ports "$prefix")
  [ -n "$ports" ] || { echo "faults.sh: no nic ports in $prefix-br" >&2; return 1; }
  for port in $ports; do
    ip -n "$prefix-br" link set "$port" nomaster || return 1
  done
  ready="$log.ready"
  rm -f "$ready"
  # nsenter execs the switch, so $! is the switch itself.
  # shellcheck disable=SC2086  # one word a port
  nsenter "--net=/run/netns/$prefix-br" chrt -f 10 "$bin" --ready "$ready" "$@" $ports >"$log" 2>&1 </dev/null &
  pid=$!
  for ((i = 0; i < 100; i++)); do
    [ -e "$ready" ] && { echo "$pid"; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "faults.sh: wire_switch did not start: $(cat "$log")" >&2
  kill "$pid" 2>/dev/null
  for port in $ports; do
    ip -n "$prefix-br" link set "$port" master br0 up
  done
  return 1
}

# switch_stop <prefix> <pid> <log>: stops the switch (it prints its counts to the log), and the ports go back to br0.
fault_switch_stop() {
  local prefix=$1 pid=$2 log=$3 port
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  for port in $(fault_nic_ports "$prefix"); do
    ip -n "$prefix-br" link set "$port" master br0 up
  done
  cat "$log"
}

# link <prefix> <node> <pe> up|down
fault_link() {
  ip -n "$1$2" link set "nic$3" "$4"
}

# The kernel's counts of every nic (ip -s link): "<node>/nic<j>: tx <n> (<d> dropped), rx <n> (<d> dropped)".
fault_link_counts() {
  local prefix=$1 ns
  for ns in $(fault_nodes "$prefix"); do
    # shellcheck disable=SC2016  # the inner shell's variables
    ip netns exec "$ns" sh -c 'cd /sys/class/net && for d in nic*; do s=$d/statistics
      echo "$0/$d: tx $(cat $s/tx_packets) ($(cat $s/tx_dropped) dropped)," \
        "rx $(cat $s/rx_packets) ($(cat $s/rx_dropped) dropped)"
    done' "$ns"
  done
}
