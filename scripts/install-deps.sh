#!/usr/bin/env bash
# Installs the Debian 12 packages mori needs to build and test on this machine. Idempotent: when every package is
# already installed it prints nothing and touches neither apt's lists nor the network.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ make pkg-config
  # device compiler, bitcode, code objects, MLIR path (Debian's hipcc is clang-15, no gfx942: docs/design.md)
  clang-19 lld-19 llvm-19 clang-tools-19 clang-format-19 mlir-19-tools libclang-rt-19-dev
  # gfx950's device compiler, bitcode and code objects: clang-19 does not know gfx950 (docs/bitcode.md). 350 MiB,
  # about 20 s here; no mlir-22-tools: the MLIR path's IR text comes from mlir-translate-19 for every arch
  clang-22 lld-22 llvm-22
  # HIP host runtime and rocPRIM (hip backend compile checks)
  libamdhip64-dev rocm-device-libs librocprim-dev
  # RDMA verbs and MLX5 direct access
  libibverbs-dev librdmacm-dev rdma-core ibverbs-providers ibverbs-utils perftest
  # bootstrap, launching, and the OpenSHMEM peer in benchmarks
  libopenmpi-dev openmpi-bin
  # tests, options, JSON
  doctest-dev libcli11-dev nlohmann-json3-dev
  # the wire tests: tshark decodes our RoCEv2 packets, zlib's CRC-32 checks their ICRC, ip makes the
  # network namespaces and bridges the nodes live on
  tshark zlib1g-dev iproute2
  # the netns tests: nft drops chosen or random RoCE datagrams (tests/netns/wire_capture.sh, faults.sh; this kernel
  # has no sch_netem), ping checks the nodes
  nftables iputils-ping
  # the Python package (python/, docs/python.md), for Debian's /usr/bin/python3
  python3-dev pybind11-dev python3-pybind11 python3-numpy python3-torch python3-pytest
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# tshark's wireshark-common asks whether non-root users may capture (dumpcap setuid): no, and no prompt
if printf '%s\n' "${missing[@]}" | grep -qx tshark; then
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
