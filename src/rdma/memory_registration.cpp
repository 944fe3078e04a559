// register_memory: dma-buf first, ibv_reg_mr as the fallback (memory_registration.hpp).
#include "rdma/memory_registration.hpp"

#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mori::rdma {
namespace {

std::string errno_text(int err) { return std::strerror(err ? err : EIO); }

}  // namespace

RegistrationCalls verbs_registration_calls() {
  RegistrationCalls calls;
  calls.reg_dmabuf = [](ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                        int access) {
    return ibv_reg_dmabuf_mr(pd, offset, length, iova, fd, access);
  };
  calls.reg_plain = [](ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
    return ibv_reg_mr_iova(pd, addr, length, iova, access);
  };
  return calls;
}

Status register_memory(ibv_pd* pd, void* base, size_t bytes, uint64_t iova, int access,
                       const std::string& what, const ExportDmabuf& exporter,
                       const RegistrationCalls& calls, Registration* out) {
  *out = Registration{};
  std::string why_not_dmabuf;
  if (exporter) {
    int fd = -1;
    uint64_t offset = 0;
    const Status exported = exporter(base, bytes, &fd, &offset);
    if (!exported.ok()) {
      why_not_dmabuf = "no dma-buf: " + exported.message();
    } else {
      errno = 0;
      ibv_mr* mr = calls.reg_dmabuf(pd, offset, bytes, iova, fd, access);
      const int err = errno;
      ::close(fd);  // the MR holds its own reference to the dma-buf
      if (mr) {
        out->mr = mr;
        out->dmabuf = true;
        return {};
      }
      why_not_dmabuf = "ibv_reg_dmabuf_mr failed: " + errno_text(err);
    }
  }
  errno = 0;
  ibv_mr* mr = calls.reg_plain(pd, base, bytes, iova, access);
  if (!mr) {
    const std::string plain = "ibv_reg_mr failed: " + errno_text(errno);
    return Status::error(
        "rdma: registering " + what + " (" + std::to_string(bytes) + " bytes) failed: " + plain +
        (why_not_dmabuf.empty()
             ? std::string()
             : "; " + why_not_dmabuf +
                   " (GPU memory needs dma-buf, Linux 5.12+ and ROCR's "
                   "hsa_amd_portable_export_dmabuf, or a peer-memory kernel module)"));
  }
  out->mr = mr;
  out->fallback_reason = why_not_dmabuf;
  return {};
}

}  // namespace mori::rdma
