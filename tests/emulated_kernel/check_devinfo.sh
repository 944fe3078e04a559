#!/usr/bin/env bash
# emulated_kernel.ibv_devinfo, emulated_kernel.bnxt_ibv_devinfo: Debian's unmodified ibv_devinfo -v,
# over the emulated kernel, lists the device of FAMILY with the attributes and GIDs the kernel
# reports: mlx5, the ConnectX-7 of connectx7.hpp; bnxt, the Thor2 of thor2.hpp under rdma-core 44's
# libbnxt_re (its public values, the driver's constants). Each expected line must appear exactly,
# and exactly four GIDs (the empty entries are skipped, as on hardware); the listing is printed on
# failure.
#   check_devinfo.sh RUN FAMILY   (RUN: scripts/with-emulated-nic.sh)
set -uo pipefail
run=$1
family=$2
out=$("$run" "$family" ibv_devinfo -v 2>&1)
rc=$?
port=(
  $'\t\t\tstate:\t\t\tPORT_ACTIVE (4)'
  $'\t\t\tactive_mtu:\t\t4096 (5)'
  $'\t\t\tlink_layer:\t\tEthernet'
)
case $family in
  mlx5)
    summary="mlx5_0, a ConnectX-7 (4129, fw 28.39.2048), RoCE v2 GID 3 ::ffff:198.18.0.1"
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
      "${port[@]}"
      $'\t\t\tgid_tbl_len:\t\t255'
      $'\t\t\tGID[  1]:\t\tfe80::966d:aeff:fe54:2b46, RoCE v2'
      $'\t\t\tGID[  3]:\t\t::ffff:198.18.0.1, RoCE v2'
    )
    ;;
  bnxt)
    summary="bnxt_re0, a Thor2 (5984, fw 230.2.49.0), RoCE v2 GID 3 ::ffff:198.18.0.2"
    expect=(
      $'hca_id:\tbnxt_re0'
      $'\tfw_ver:\t\t\t\t230.2.49.0'
      $'\tvendor_id:\t\t\t0x14e4'
      $'\tvendor_part_id:\t\t\t5984'
      $'\tmax_qp:\t\t\t\t131073'
      $'\tmax_qp_wr:\t\t\t4351'
      $'\tmax_sge:\t\t\t6'
      $'\tmax_cq:\t\t\t\t65536'
      $'\tmax_cqe:\t\t\t8388607'
      $'\tmax_qp_rd_atom:\t\t\t126'
      $'\tatomic_cap:\t\t\tATOMIC_GLOB (2)'
      $'\tmax_pkeys:\t\t\t1'
      "${port[@]}"
      $'\t\t\tgid_tbl_len:\t\t256'
      $'\t\t\tGID[  3]:\t\t::ffff:198.18.0.2, RoCE v2'
    )
    ;;
  *)
    echo "check_devinfo.sh: no expected listing for family '$family'"
    exit 2
    ;;
esac
fail=0
[[ $rc -eq 0 ]] || { echo "ibv_devinfo exited with $rc"; fail=1; }
for line in "${expect[@]}"; do
  grep -qxF -- "$line" <<<"$out" || { echo "missing line: $(printf %q "$line")"; fail=1; }
done
n=$(grep -c 'GID\[' <<<"$out")
[[ $n -eq 4 ]] || { echo "expected 4 GIDs, got $n"; fail=1; }
if [[ $fail -ne 0 ]]; then
  echo "--- ibv_devinfo -v:"
  echo "$out"
  exit 1
fi
echo "ibv_devinfo -v lists $summary"
