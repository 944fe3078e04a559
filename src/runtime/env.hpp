// Environment variables of the runtime: parsed once at init, each error quoting the variable and
// its value.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "heap/heap_memory.hpp"
#include "mori/state/gpu_states.hpp"
#include "mori/status.hpp"

namespace mori::env {

// "6G", "512M", "2g", "64k", "1T" or plain bytes ("1048576"). Anything else, zero, or an overflow
// is an error that quotes the text:
//   MORI_SHMEM_HEAP_SIZE="6X" is not a size: use bytes or a number with K, M, G or T (6G)
Status parse_size(const char* variable, const std::string& text, size_t* out);
// A non-negative decimal integer no greater than `max`. Errors quote the text:
//   MORI_SHMEM_TIMEOUT_MS="-1" is not a non-negative integer
//   MORI_NUM_QP_PER_PE="257" is too large: the most accepted is 256
Status parse_uint(const char* variable, const std::string& text, uint64_t max, uint64_t* out);

// Refuses a NIC family the build's device code does not carry. `providers` is the build's list as
// CMake's MORI_RDMA_PROVIDERS spells it (transport::compiled_rdma_providers()):
//   MORI_DEVICE_NIC="bnxt": this build's device code carries mlx5 only (reconfigure with
//   -DMORI_RDMA_PROVIDERS="mlx5;bnxt")
Status check_nic_built(state::Nic nic, std::string_view providers);

inline constexpr int kDefaultMaxTeams = 64;
inline constexpr size_t kDefaultTeamScratch = size_t{64} << 10;

struct Settings {
  size_t heap_size = size_t{1} << 30;         // MORI_SHMEM_HEAP_SIZE, default 1G
  heap::Mode heap_mode = heap::Mode::Static;  // MORI_SHMEM_MODE=static_heap|vmm_heap
  size_t vmm_chunk_size = size_t{64} << 20;   // MORI_SHMEM_VMM_CHUNK_SIZE, default 64M
  int num_qp_per_pe = 4;  // MORI_NUM_QP_PER_PE, 1..256 (state::kMaxQpPerPe: contexts)
  std::chrono::milliseconds bootstrap_timeout{30000};  // MORI_SHMEM_BOOTSTRAP_TIMEOUT, in seconds
  uint64_t timeout_ms = 0;      // MORI_SHMEM_TIMEOUT_MS: device wait deadline, 0 = none
  bool check_symmetry = false;  // MORI_SHMEM_CHECK_SYMMETRY=0|1, default 1 in debug builds
  std::string rdma_devices;     // MORI_RDMA_DEVICES, as given
  // MORI_DEVICE_NIC=mlx5|bnxt|ionic: the NIC family whose WQEs the GPU writes, one the build
  // carries (check_nic_built). On the host backend, setting it selects the software NIC of that
  // family; unset, RDMA goes to ibverbs devices (as on the hip backend, where unset means the
  // build's first family, transport::default_rdma_nic()).
  state::Nic device_nic = state::Nic::kNone;
  // MORI_BNXT_DV_LIB, MORI_IONIC_DV_LIB: the direct-verbs library (a name for dlopen or a path)
  // to load for MORI_DEVICE_NIC=bnxt or ionic on hardware instead of the defaults
  // (rdma/vendor_dv.hpp); as given, "" when unset.
  std::string bnxt_dv_lib;
  std::string ionic_dv_lib;
  int pes_per_node = 0;         // MORI_SHMEM_PES_PER_NODE: testing only, see runtime/node.hpp
  int ib_gid_index = -1;        // MORI_IB_GID_INDEX 0..255; -1: a RoCE v2 entry, 0 on InfiniBand
  uint32_t rdma_sq_wqes = 256;  // MORI_RDMA_SQ_WQES: SQ entries per QP, a power of two 16..65536
  // MORI_RDMA_TC 0..255 and MORI_RDMA_SL 0..15 (ROCm/mori's names): the GRH traffic class (on
  // RoCE v2 the IP header's DSCP << 2 | ECN) and the service level (on RoCE, the VLAN priority)
  // of every QP's address vector, so that traffic rides the fabric's lossless class.
  int rdma_traffic_class = 0;
  int rdma_service_level = 0;
  // MORI_RDMA_TIMEOUT 0..31 and MORI_RDMA_RETRY_CNT 0..7 (NCCL_IB_TIMEOUT's and
  // NCCL_IB_RETRY_CNT's meaning): every RC QP's local ACK timeout, 4.096 us * 2^timeout (0: none),
  // and its transport retries (ibv_modify_qp(3), RTS). 14 and 7: about 0.5 s without an ACK ends
  // the QP in IBV_WC_RETRY_EXC_ERR.
  int rdma_timeout = 14;
  int rdma_retry_cnt = 7;
  // MORI_RDMA_RELAXED_ORDERING=0|1: relaxed-ordering MRs (rdma/verbs_network.cpp says what it
  // costs put_signal's ordering); off by default.
  bool rdma_relaxed_ordering = false;
  int max_teams = kDefaultMaxTeams;  // MORI_SHMEM_MAX_TEAMS: live teams per PE, predefined included
  // MORI_SHMEM_TEAM_SCRATCH_SIZE: symmetric staging per team index for the device collectives
  // (mori/shmem/coll/flags.hpp's mailboxes, coll/reduce.hpp's staged rounds), a multiple of
  // kTeamScratchGranule from kTeamScratchMin to kTeamScratchMax. The runtime reserves max_teams
  // of them in the heap.
  size_t team_scratch = kDefaultTeamScratch;
};

inline constexpr size_t kTeamScratchGranule = 256;
inline constexpr size_t kTeamScratchMin = size_t{4} << 10;
inline constexpr size_t kTeamScratchMax = size_t{64} << 20;

// The most MORI_SHMEM_MAX_TEAMS accepts: each team index takes five words of the runtime's 128 KiB
// internal area from word state::kTeamSyncFirstWord on: (16384 - 64) / 5 (runtime.hpp checks it).
inline constexpr int kMaxTeamsLimit = 3264;

// Reads every variable above from the environment; unset or empty ones keep their defaults. In
// vmm_heap mode heap_size is rounded UP to a whole number of VMM chunks, and the chunk size must be
// a multiple of the page size. *out is written only on success.
Status load(Settings* out);

}  // namespace mori::env
