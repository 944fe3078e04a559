#!/usr/bin/env bash
# netns.layout: scripts/netns.sh builds the nodes it promises, on a prefix of its own (mori-l) so that the fixture's
# namespaces (mori-t) stay as they are: addresses, the bridge, ARP per interface, no way out of 198.18.0.0/15, MTU=,
# and that down leaves nothing behind.
set -euo pipefail
netns=$(cd "$(dirname "$0")/../../scripts" && pwd)/netns.sh
p=mori-l
fail() {
  echo "netns.layout: FAILED: $*" >&2
  "$netns" down "$p" || true
  exit 1
}
command -v ping >/dev/null || fail "no ping (apt-get install iputils-ping)"
"$netns" up "$p" 2 2

want=$'eth0 198.18.0.2/24\nnic0 198.19.1.1/16\nnic1 198.19.1.2/16'
got=$(ip -n "${p}1" -4 -o addr show scope global | awk '{print $2, $4}')
[ "$got" = "$want" ] || fail "node 1's addresses are '$got'"
ports=$(ip -n "$p-br" -o link show master br0 | awk -F': ' '{print $2}' | cut -d@ -f1 | sort | tr '\n' ' ')
[ "$ports" = "mori-l0e0 mori-l0n0 mori-l0n1 mori-l1e0 mori-l1n0 mori-l1n1 " ] || fail "bridge ports are '$ports'"
[ "$(ip netns exec "$p-br" cat /sys/class/net/br0/bridge/stp_state)" = 0 ] ||
  fail "br0 runs STP"
for node in 0 1; do
  [ "$(ip netns exec "$p$node" cat /proc/sys/net/ipv4/conf/all/arp_ignore)" = 1 ] || fail "node $node: arp_ignore"
done

# Across nodes, on the NICs and on eth0.
ip netns exec "${p}0" ping -c1 -W1 -I nic0 198.19.1.2 >/dev/null || fail "node 0 nic0 cannot ping node 1 nic1"
ip netns exec "${p}0" ping -c1 -W1 -I eth0 198.18.0.2 >/dev/null || fail "node 0 eth0 cannot ping node 1 eth0"
# ARP per interface: node 1's nic1 answered for 198.19.1.2, not nic0 (which shares its subnet and its wire).
mac_nic1=$(ip netns exec "${p}1" cat /sys/class/net/nic1/address)
arp=$(ip -n "${p}0" neigh show 198.19.1.2 dev nic0 | awk '{print $3}')
[ "$arp" = "$mac_nic1" ] || fail "node 0 learnt 198.19.1.2 at '$arp', node 1's nic1 is $mac_nic1"

# Nothing outside 198.18.0.0/15: no default route, so the kernel refuses at once.
[ -z "$(ip -n "${p}0" route show default)" ] || fail "node 0 has a default route"
for outside in 192.0.2.1 10.0.0.1 8.8.8.8; do
  if ip netns exec "${p}0" ping -c1 -W1 "$outside" >/dev/null 2>&1; then fail "node 0 reached $outside"; fi
done
routes=$(ip -n "${p}0" -4 route show | awk '{print $1}' | sort -u | tr '\n' ' ')
[ "$routes" = "198.18.0.0/24 198.19.0.0/16 " ] || fail "node 0's routes are '$routes'"

# MTU= sets every interface.
MTU=4000 "$netns" up "$p" 1 1
for dev in eth0 nic0; do
  [ "$(ip netns exec "${p}0" cat "/sys/class/net/$dev/mtu")" = 4000 ] || fail "MTU=4000 did not set $dev"
done
[ ! -e "/run/netns/${p}1" ] || fail "up did not first remove the earlier node 1"

"$netns" down "$p"
left=$(ip netns list | awk '{print $1}' | grep "^$p" || true)
[ -z "$left" ] || fail "down left: $left"
"$netns" down "$p" || fail "a second down failed"
echo "netns.layout: ok"
