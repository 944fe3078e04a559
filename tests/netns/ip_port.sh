#!/usr/bin/env bash
# netns.ip_port: ip_port_probe between the fixture's nodes (mori-t, 2 nodes of 2 PEs) while tshark captures the
# bridge: every datagram the probe sent to node 1 is on the wire once, with its IPv4 id, UDP to 4791.
#   ip_port.sh <ip_port_probe> <prefix> <pcap-file>
set -euo pipefail
netns=$(cd "$(dirname "$0")/../../scripts" && pwd)/netns.sh
probe=$1 prefix=$2 pcap=$3
pid=$("$netns" capture "$prefix" "$pcap")
status=0
out=$("$probe" "$prefix") || status=$?
"$netns" capture-stop "$pid"
echo "$out"
[ "$status" -eq 0 ] || exit "$status"
ids=$(sed -n 's/^sent ids: //p' <<<"$out")
[ -n "$ids" ] || { echo "netns.ip_port: FAILED: the probe printed no ids" >&2; exit 1; }
# tshark prints ip.id in hex (0x4d00); the probe printed decimal.
seen=$(tshark -r "$pcap" -Y "ip.dst == 198.19.1.1 && udp.dstport == 4791" -T fields -e ip.id 2>/dev/null |
  while read -r id; do echo $((id)); done | tr '\n' ' ')
if [ "$seen" != "$ids " ]; then
  echo "netns.ip_port: FAILED: the capture has ids '$seen' to 198.19.1.1, the probe sent '$ids'" >&2
  exit 1
fi
echo "netns.ip_port: capture $pcap: ids $seen"
