#!/usr/bin/env bash
# Runs a verbs program over the emulated uverbs kernel (tests/emulated_kernel): rdma-core's own
# libibverbs and provider, unmodified, see one emulated device of the given family.
#   scripts/with-emulated-nic.sh mlx5 ibv_devinfo -v
#   scripts/with-emulated-nic.sh bnxt ibv_devinfo -v
#   scripts/with-emulated-nic.sh mlx5 sh -c 'ib_write_bw -d mlx5_0 -x 3 & sleep 1; ib_write_bw -d mlx5_0 -x 3 127.0.0.1'
# Every process the command starts shares one HCA (its QP numbers, keys and memory regions), kept
# with the sysfs tree in a temporary directory under /dev/shm that is removed afterwards.
# MORI_EMULATED_UVERBS names the shim (default: build/tests/emulated_kernel/libmori_emulated_uverbs.so);
# MORI_EMU_TRACE=1 logs every command the provider sends.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ $# -lt 2 ]]; then
  echo "usage: $0 mlx5|bnxt COMMAND [ARGS...]" >&2
  exit 2
fi
family=$1
shift
if [[ $family != mlx5 && $family != bnxt ]]; then
  echo "$0: family '$family' is not emulated (mlx5 and bnxt are)" >&2
  exit 2
fi
shim=${MORI_EMULATED_UVERBS:-$root/build/tests/emulated_kernel/libmori_emulated_uverbs.so}
if [[ ! -f $shim ]]; then
  echo "$0: $shim not found; build the target mori_emulated_uverbs" >&2
  exit 2
fi
dir=$(mktemp -d /dev/shm/mori-emu.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/sys"
export MORI_EMU_DIR=$dir MORI_EMU_FAMILY=$family SYSFS_PATH=$dir/sys
export LD_PRELOAD=$shim${LD_PRELOAD:+:$LD_PRELOAD}
set +e
"$@"
rc=$?
set -e
exit $rc
