#!/usr/bin/env bash
# "Nodes" as Linux network namespaces, so that the software NIC of each PE sends real RoCEv2 datagrams to the PEs of
# other nodes. With prefix P:
#   P-br        the wire: bridge br0 (no STP, forwarding delay 0) holding the other end of every veth below
#   P<i>        node i: eth0 198.18.0.(i+1)/24 (the bootstrap's interface, MORI_SOCKET_IFNAME) and nic<j>
#               198.19.i.(j+1)/16 for each PE j of the node (its software NIC, MORI_SOFTNIC_IFNAME; the address is
#               its RoCE GID). arp_ignore=1 and arp_announce=2: each interface answers ARP only for its own
#               address, so a datagram to nic1 arrives on nic1 and not on nic0 of the same node. Only
#               198.18.0.0/15 (RFC 2544 benchmarking space), no default route: nothing leaves the namespaces.
#
#   scripts/netns.sh check [netem]                  exits 1 with one line naming what is missing (netem: the
#                                                   sch_netem qdisc as well)
#   scripts/netns.sh up <prefix> <nodes> <pes_per_node>   (MTU=<n> sets every interface's MTU, default 1500)
#   scripts/netns.sh down <prefix>                  deletes every namespace whose name starts with the prefix
#   scripts/netns.sh netem <prefix> <node> <pe> <netem args...>   tc qdisc replace dev nic<pe> root netem ...
#   scripts/netns.sh netem-clear <prefix> <node> <pe>
#   scripts/netns.sh link <prefix> <node> <pe> up|down
#   scripts/netns.sh capture <prefix> <pcap-file>   starts tshark in P-br (udp port 4791) and prints its pid
#   scripts/netns.sh capture-stop <pid>
set -euo pipefail

die() {
  echo "netns.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '13,21p' "$0" >&2
  exit 2
}

# The bridge-side name of a veth: "<prefix><node>e0" or "<prefix><node>n<pe>", or without the prefix when that
# would exceed IFNAMSIZ-1 (15); the names only have to be unique inside P-br.
peer_name() {
  local prefix=$1 rest=$2
  local name="$prefix$rest"
  if [ ${#name} -gt 15 ]; then
    name="v$rest"
  fi
  echo "$name"
}

check() {
  local want_netem=${1:-}
  [ "$(id -u)" -eq 0 ] || die "check: not root (namespaces, veths and raw sockets need root)"
  command -v ip >/dev/null || die "check: no 'ip' (apt-get install iproute2)"
  ip netns list >/dev/null 2>&1 || die "check: 'ip netns' does not work"
  command -v tc >/dev/null || die "check: no 'tc' (apt-get install iproute2)"
  command -v tshark >/dev/null || die "check: no 'tshark' (apt-get install tshark)"
  local ns="mori-check-$$"
  ip netns add "$ns" 2>/dev/null || die "check: cannot create a network namespace ('ip netns add' failed)"
  local missing=""
  if ! ip -n "$ns" link add v0 type veth peer name v1 2>/dev/null; then
    missing="veth pairs (CONFIG_VETH)"
  elif ! ip -n "$ns" link add br0 type bridge 2>/dev/null; then
    missing="bridges (CONFIG_BRIDGE)"
  elif [ "$want_netem" = netem ] && ! ip netns exec "$ns" tc qdisc add dev v0 root netem delay 1ms 2>/dev/null; then
    missing="tc netem (the kernel has no sch_netem qdisc: CONFIG_NET_SCH_NETEM)"
  fi
  ip netns delete "$ns"
  [ -z "$missing" ] || die "check: no $missing"
}

down() {
  local prefix=$1 ns
  [ -n "$prefix" ] || die "down: empty prefix"
  # `ip netns list` prints "name (id: n)"; the name is the first word.
  for ns in $(ip netns list | awk '{print $1}'); do
    case "$ns" in
      "$prefix"*) ip netns delete "$ns" ;;
    esac
  done
}

up() {
  local prefix=$1 nodes=$2 ppn=$3 mtu=${MTU:-1500}
  [[ "$nodes" =~ ^[0-9]+$ && "$nodes" -ge 1 && "$nodes" -le 254 ]] || die "up: nodes must be 1..254, not '$nodes'"
  [[ "$ppn" =~ ^[0-9]+$ && "$ppn" -ge 1 && "$ppn" -le 250 ]] || die "up: pes_per_node must be 1..250, not '$ppn'"
  [[ "$mtu" =~ ^[0-9]+$ ]] || die "up: MTU must be a number, not '$mtu'"
  [ $((${#prefix} + ${#nodes})) -le 12 ] || die "up: prefix '$prefix' too long for interface names"
  down "$prefix"
  local br="$prefix-br" i j node peer
  ip netns add "$br"
  # shellcheck disable=SC2016  # $f is the inner shell's
  ip netns exec "$br" sh -c 'for f in all default; do echo 1 >/proc/sys/net/ipv6/conf/$f/disable_ipv6; done'
  ip -n "$br" link set lo up
  ip -n "$br" link add br0 type bridge stp_state 0 forward_delay 0
  ip -n "$br" link set br0 mtu "$mtu" up
  for ((i = 0; i < nodes; i++)); do
    node="$prefix$i"
    ip netns add "$node"
    # accept_local: a datagram from nic0 to nic1 of the same node leaves on nic0 (the sender binds its socket to
    # it) and comes back over the bridge with a local source address, which the kernel drops as martian otherwise.
    # No IPv6 (set before the interfaces exist, so they get no link-local address): the wire carries only what
    # the tests send, and the ARP that it needs.
    # shellcheck disable=SC2016  # $f is the inner shell's
    ip netns exec "$node" sh -c '
      for f in all default; do
        echo 1 >/proc/sys/net/ipv4/conf/$f/arp_ignore
        echo 2 >/proc/sys/net/ipv4/conf/$f/arp_announce
        echo 0 >/proc/sys/net/ipv4/conf/$f/rp_filter
        echo 1 >/proc/sys/net/ipv4/conf/$f/accept_local
        echo 1 >/proc/sys/net/ipv6/conf/$f/disable_ipv6
      done'
    # One ip process per namespace: its batch mode creates the veths (their bridge ends moved to P-br at once) and
    # sets the addresses.
    {
      echo "link set lo up"
      peer=$(peer_name "$prefix" "${i}e0")
      echo "link add eth0 mtu $mtu type veth peer name $peer mtu $mtu netns $br"
      echo "addr add 198.18.0.$((i + 1))/24 dev eth0"
      echo "link set eth0 up"
      for ((j = 0; j < ppn; j++)); do
        peer=$(peer_name "$prefix" "${i}n$j")
        echo "link add nic$j mtu $mtu type veth peer name $peer mtu $mtu netns $br"
        echo "addr add 198.19.$i.$((j + 1))/16 dev nic$j"
        echo "link set nic$j up"
      done
    } | ip -n "$node" -batch -
    {
      echo "link set $(peer_name "$prefix" "${i}e0") master br0 up"
      for ((j = 0; j < ppn; j++)); do
        echo "link set $(peer_name "$prefix" "${i}n$j") master br0 up"
      done
    } | ip -n "$br" -batch -
  done
}

node_ns() {
  local prefix=$1 node=$2
  [ -e "/run/netns/$prefix$node" ] || die "no namespace $prefix$node (scripts/netns.sh up first)"
  echo "$prefix$node"
}

capture() {
  local prefix=$1 file=$2 log pid i
  [ -e "/run/netns/$prefix-br" ] || die "capture: no namespace $prefix-br (scripts/netns.sh up first)"
  rm -f "$file"
  log="$file.log"
  # Not on br0: a bridge device sees only the frames delivered to the bridge itself, not the unicast it forwards
  # between ports. On every port ("any", Linux cooked frames: no Ethernet header) each datagram passes twice, in
  # from its sender's veth and out to its receiver's: "inbound" keeps the first. nsenter execs tshark (ip netns
  # exec forks and waits), so the pid printed is tshark's own, which capture-stop signals. tshark's output goes
  # to <file>.log.
  nsenter "--net=/run/netns/$prefix-br" tshark -q -i any -f "inbound and udp port 4791" -w "$file" \
    >"$log" 2>&1 </dev/null &
  pid=$!
  # Capturing once the pcapng file holds its section header (dumpcap writes it after opening the interfaces).
  for ((i = 0; i < 100; i++)); do
    if [ -s "$file" ]; then
      echo "$pid"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || die "capture: tshark ended: $(tr '\n' ' ' <"$log")"
    sleep 0.1
  done
  kill "$pid" 2>/dev/null || true
  die "capture: tshark wrote nothing to $file in 10 s: $(tr '\n' ' ' <"$log")"
}

capture_stop() {
  local pid=$1 i
  [[ "$pid" =~ ^[0-9]+$ ]] || die "capture-stop: '$pid' is not a pid"
  kill -0 "$pid" 2>/dev/null || return 0
  # libpcap's TPACKET_V3 ring hands dumpcap a block of packets only when it is full or its timeout (dumpcap's 250
  # ms read timeout) expires, and a stopped dumpcap does not read the block still open: without this wait the
  # datagrams of the last quarter second before the stop are missing from the file.
  sleep 0.6
  kill -INT "$pid" 2>/dev/null || return 0
  # SIGINT: tshark flushes the file and exits; it is not our child here, so poll instead of wait.
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case "$cmd" in
  check)
    [ $# -le 1 ] || usage
    check "${1:-}"
    ;;
  up)
    [ $# -eq 3 ] || usage
    up "$@"
    ;;
  down)
    [ $# -eq 1 ] || usage
    down "$1"
    ;;
  netem)
    [ $# -ge 4 ] || usage
    ns=$(node_ns "$1" "$2")
    dev="nic$3"
    shift 3
    ip netns exec "$ns" tc qdisc replace dev "$dev" root netem "$@"
    ;;
  netem-clear)
    [ $# -eq 3 ] || usage
    ns=$(node_ns "$1" "$2")
    # Deleting the root qdisc when there is none fails: clear is idempotent.
    ip netns exec "$ns" tc qdisc del dev "nic$3" root 2>/dev/null || true
    ;;
  link)
    [ $# -eq 4 ] || usage
    ns=$(node_ns "$1" "$2")
    case "$4" in
      up | down) ip -n "$ns" link set "nic$3" "$4" ;;
      *) usage ;;
    esac
    ;;
  capture)
    [ $# -eq 2 ] || usage
    capture "$@"
    ;;
  capture-stop)
    [ $# -eq 1 ] || usage
    capture_stop "$1"
    ;;
  *) usage ;;
esac
