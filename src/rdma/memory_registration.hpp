// How VerbsNetwork registers memory with the NIC (docs/rdma-hardware.md, "Memory registration").
//
// GPU memory reaches a NIC in one of two ways. The upstream one is dma-buf: the GPU driver exports
// the range's buffer object as a dma-buf file descriptor with the range's offset in it (the hip
// backend: ROCR's hsa_amd_portable_export_dmabuf, backend/hip/dmabuf_export.hpp) and the NIC
// imports it at that offset (ibv_reg_dmabuf_mr(3), rdma-core 34 and
// later; Linux 5.12 and later). The other is plain ibv_reg_mr on the GPU's virtual address, which
// works only with a peer-memory kernel module (amdgpu's peer-direct, or the out-of-tree
// ib_peer_mem). ROCm/mori registers with dma-buf; so does register_memory, falling back to
// ibv_reg_mr when there is no exporter, the export fails (host memory has no dma-buf), or the NIC
// refuses the import.
//
// Every registration names its IOVA, the address the device posts in its WQEs: the range's own
// address for the heap and user buffers, the device's mapping of the ibuf for the ibuf (so the
// ibuf need not map at the host's address).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "mori/status.hpp"

struct ibv_pd;
struct ibv_mr;

namespace mori::rdma {

// Exports [base, base + bytes) as a dma-buf: *fd (which the caller closes) and the range's
// *offset in it. An error means "no dma-buf for this range"; register_memory falls back.
using ExportDmabuf = std::function<Status(void* base, size_t bytes, int* fd, uint64_t* offset)>;

// The two registration calls, replaceable by tests. Each returns the MR, or null with errno set.
struct RegistrationCalls {
  std::function<ibv_mr*(ibv_pd*, uint64_t offset, size_t length, uint64_t iova, int fd,
                        int access)>
      reg_dmabuf;  // ibv_reg_dmabuf_mr
  std::function<ibv_mr*(ibv_pd*, void* addr, size_t length, uint64_t iova, int access)>
      reg_plain;  // ibv_reg_mr_iova
};
// The real calls of libibverbs.
RegistrationCalls verbs_registration_calls();

struct Registration {
  ibv_mr* mr = nullptr;
  bool dmabuf = false;
  std::string fallback_reason;  // why dma-buf was not used, when an exporter was given
};

// Registers [base, base + bytes) of `pd` for `access`, addressed by the device as `iova`:
// through a dma-buf from `exporter` if it gives one and the NIC imports it, otherwise with
// ibv_reg_mr. `what` names the range in errors ("the symmetric heap"). Fails only when the plain
// registration fails too; the error then gives both causes.
Status register_memory(ibv_pd* pd, void* base, size_t bytes, uint64_t iova, int access,
                       const std::string& what, const ExportDmabuf& exporter,
                       const RegistrationCalls& calls, Registration* out);

}  // namespace mori::rdma
