#!/usr/bin/env bash
# emulated_kernel.bnxt_ibv_devinfo: Debian's unmodified ibv_devinfo -v, over the emulated kernel with
# rdma-core 44's libbnxt_re, lists bnxt_re0, the Thor2 of thor2.hpp: each expected line exactly
# (the Thor2's public values, the driver's constants, the RoCE v2 GID); the listing on failure.
set -uo pipefail
out=$("$1" bnxt ibv_devinfo -v 2>&1)
rc=$?
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
  $'\t\t\tstate:\t\t\tPORT_ACTIVE (4)'
  $'\t\t\tactive_mtu:\t\t4096 (5)'
  $'\t\t\tlink_layer:\t\tEthernet'
  $'\t\t\tgid_tbl_len:\t\t256'
  $'\t\t\tGID[  3]:\t\t::ffff:198.18.0.2, RoCE v2'
)
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
echo "ibv_devinfo -v lists bnxt_re0, a Thor2 (5984, fw 230.2.49.0), RoCE v2 GID 3 ::ffff:198.18.0.2"
