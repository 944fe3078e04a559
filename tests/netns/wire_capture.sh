#!/usr/bin/env bash
# netns.wire_capture_<nic>: the software NIC's packets between two nodes, checked by Wireshark. With the
# nodes up (MORI_TEST_NETNS=<prefix>, 2 nodes of 2 PEs):
#   1. an nftables rule in node 1 drops the first RDMA WRITE Middle that arrives on its nic0 (the capture, on the
#      bridge, still sees it): the first put of wire_capture.cpp loses one packet and must retransmit it;
#   2. tshark captures the bridge (netns.sh capture) while the MPI command runs wire_capture.cpp (which checks every
#      byte on every PE);
#   3. the rule must have dropped exactly one packet; the capture, converted to a classic pcap, goes to
#      capture_check.cpp, which checks it under Wireshark's InfiniBand dissector and recomputes every ICRC.
#   wire_capture.sh <output-prefix> <capture_check> <mpirun command...>
# Leaves <output-prefix>.pcapng (the capture) and <output-prefix>.pcap (the same packets as libpcap, for the checker).
set -euo pipefail
netns=$(cd "$(dirname "$0")/../../scripts" && pwd)/netns.sh
[ $# -ge 3 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
out=$1 checker=$2
shift 2
prefix=${MORI_TEST_NETNS:?MORI_TEST_NETNS names the nodes (scripts/netns.sh up <prefix> 2 2)}
node1=$prefix"1"
fail() {
  echo "netns.wire_capture: FAILED: $*" >&2
  exit 1
}
command -v nft >/dev/null || fail "no nft (apt-get install nftables)"
[ -e "/run/netns/$node1" ] || fail "no namespace $node1 (scripts/netns.sh up $prefix 2 2)"

# The drop: in node 1's input hook, UDP to 4791 on nic0 (PE 2's NIC) whose BTH opcode (the first byte after the 8 bytes
# of UDP header, @th,64,8) is 0x07, RC RDMA WRITE Middle. "quota until 1500 bytes" matches while fewer than 1500 bytes
# have matched, the packet's own included (nft_quota.c: consumed >= quota ends it): only the first Middle (1068 bytes
# at path MTU 1024), not its retransmission nor the later put's. The counter after it counts what was dropped.
table=mori_wire_capture
cleanup() {
  ip netns exec "$node1" nft delete table inet "$table" 2>/dev/null || true
  if [ -n "${pid:-}" ]; then "$netns" capture-stop "$pid" || true; fi
}
trap cleanup EXIT
ip netns exec "$node1" nft delete table inet "$table" 2>/dev/null || true
ip netns exec "$node1" nft -f - <<EOF
table inet $table {
  chain input {
    type filter hook input priority filter; policy accept;
    iifname "nic0" udp dport 4791 @th,64,8 0x07 quota until 1500 bytes counter drop
  }
}
EOF

# The local ACK timeout at 4.096 us * 2^20 (4.3 s) rather than the default 2^14 (67 ms): on a loaded machine an ACK or
# the NAK can take longer than 67 ms to come back, and a retransmission by the timer would add packets that the
# checker's exact sequence does not expect. The loss is then answered by the NAK alone.
export MORI_RDMA_TIMEOUT=${MORI_RDMA_TIMEOUT:-20}
pid=$("$netns" capture "$prefix" "$out.pcapng")
status=0
"$@" || status=$?
"$netns" capture-stop "$pid"
pid=
[ "$status" -eq 0 ] || fail "the MPI program failed (exit $status)"

rule=$(ip netns exec "$node1" nft list table inet "$table")
dropped=$(sed -n 's/.*counter packets \([0-9]*\) bytes.*/\1/p' <<<"$rule")
[ "$dropped" = 1 ] || fail "the nftables rule in $node1 dropped '$dropped' packets, not 1: $rule"
echo "netns.wire_capture: the nftables rule in $node1 dropped 1 packet (RDMA WRITE Middle)"

# The capture's Linux cooked frames (-i any) as a classic pcap file, whose records the checker reads itself.
tshark -r "$out.pcapng" -w "$out.pcap" -F pcap 2>/dev/null || fail "tshark cannot convert $out.pcapng to pcap"
MORI_CAPTURE_PCAP=$out.pcap "$checker" || fail "the capture $out.pcapng does not check (above)"
echo "netns.wire_capture: capture $out.pcapng checked"
