#!/usr/bin/env bash
# emulated_kernel.ibv_devinfo: Debian's unmodified ibv_devinfo -v, over the emulated kernel, lists
# the ConnectX-7 (connectx7.hpp) with the attributes and GIDs the kernel reports. Each expected line
# must appear exactly; the listing is printed on failure.
set -uo pipefail
run=$1
out=$("$run" mlx5 ibv_devinfo -v 2>&1)
rc=$?
expect=(
  $'hca_id:\tmlx5_0'
  $'\tfw_ver:\t\t\t\t28.39.2048'
  $'\tnode_guid:\t\t\t946d:ae03:0054:2b46'
  $'\tvendor_id:\t\t\t0x02c9'
  $'\tvendor_part_id:\t\t\t4129'
  $'\tboard_id:\t\t\tLNV0000000056'
  $'\tmax_qp_wr:\t\t\t32768'
  $'\tmax_cqe:\t\t\t4194303'
  $'\tmax_qp_rd_atom:\t\t\t16'
  $'\tatomic_cap:\t\t\tATOMIC_HCA (1)'
  $'\t\t\tstate:\t\t\tPORT_ACTIVE (4)'
  $'\t\t\tactive_mtu:\t\t4096 (5)'
  $'\t\t\tlink_layer:\t\tEthernet'
  $'\t\t\tgid_tbl_len:\t\t255'
  $'\t\t\tGID[  1]:\t\tfe80::966d:aeff:fe54:2b46, RoCE v2'
  $'\t\t\tGID[  3]:\t\t::ffff:198.18.0.1, RoCE v2'
)
fail=0
[[ $rc -eq 0 ]] || { echo "ibv_devinfo exited with $rc"; fail=1; }
for line in "${expect[@]}"; do
  grep -qxF -- "$line" <<<"$out" || { echo "missing line: $(printf %q "$line")"; fail=1; }
done
# Four GIDs, no more: the empty entries are skipped, as on hardware.
n=$(grep -c 'GID\[' <<<"$out")
[[ $n -eq 4 ]] || { echo "expected 4 GIDs, got $n"; fail=1; }
if [[ $fail -ne 0 ]]; then
  echo "--- ibv_devinfo -v:"
  echo "$out"
  exit 1
fi
echo "ibv_devinfo -v lists mlx5_0, a ConnectX-7 (4129, fw 28.39.2048), RoCE v2 GID 3 ::ffff:198.18.0.1"
