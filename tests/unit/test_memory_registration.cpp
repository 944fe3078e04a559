// register_memory (src/rdma/memory_registration.hpp): dma-buf first, plain registration as the
// fallback, each call given the IOVA and the range, the exported descriptor closed, and both
// causes in the error when neither works. The verbs calls are fakes that record what they got.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "rdma/memory_registration.hpp"

namespace rdma = mori::rdma;

namespace {

struct Call {
  int count = 0;
  uint64_t offset = 0, iova = 0;
  size_t length = 0;
  int fd = -1, access = 0;
  void* addr = nullptr;
};

// Fake registrations: succeed with `mr` or fail with `err`.
struct Fakes {
  ibv_mr* dmabuf_mr = nullptr;
  int dmabuf_err = 0;
  ibv_mr* plain_mr = nullptr;
  int plain_err = 0;
  Call dmabuf, plain;
  rdma::RegistrationCalls calls() {
    rdma::RegistrationCalls c;
    c.reg_dmabuf = [this](ibv_pd*, uint64_t offset, size_t length, uint64_t iova, int fd,
                          int access) {
      dmabuf = {dmabuf.count + 1, offset, iova, length, fd, access, nullptr};
      errno = dmabuf_err;
      return dmabuf_mr;
    };
    c.reg_plain = [this](ibv_pd*, void* addr, size_t length, uint64_t iova, int access) {
      plain = {plain.count + 1, 0, iova, length, -1, access, addr};
      errno = plain_err;
      return plain_mr;
    };
    return c;
  }
};

ibv_mr* fake_mr(uintptr_t v) { return reinterpret_cast<ibv_mr*>(v); }
bool fd_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

}  // namespace

TEST_CASE("memory registration: dma-buf when the exporter gives one, its fd closed") {
  Fakes f;
  f.dmabuf_mr = fake_mr(0x1000);
  int exported = -1;
  const rdma::ExportDmabuf exporter = [&](void* base, size_t bytes, int* fd, uint64_t* offset) {
    CHECK(base == reinterpret_cast<void*>(0x7000123));
    CHECK(bytes == 4096);
    *fd = exported = ::open("/dev/null", O_RDONLY);
    *offset = 0x123;
    return mori::Status{};
  };
  rdma::Registration reg;
  const auto status = rdma::register_memory(nullptr, reinterpret_cast<void*>(0x7000123), 4096,
                                            0x9000123, 7, "the heap", exporter, f.calls(), &reg);
  REQUIRE_MESSAGE(status.ok(), status.message());
  CHECK(reg.mr == f.dmabuf_mr);
  CHECK(reg.dmabuf);
  CHECK(reg.fallback_reason.empty());
  CHECK(f.dmabuf.count == 1);
  CHECK(f.dmabuf.offset == 0x123);
  CHECK(f.dmabuf.iova == 0x9000123);
  CHECK(f.dmabuf.length == 4096);
  CHECK(f.dmabuf.fd == exported);
  CHECK(f.dmabuf.access == 7);
  CHECK(f.plain.count == 0);
  CHECK_FALSE(fd_open(exported));
}

TEST_CASE("memory registration: falls back to ibv_reg_mr, saying why") {
  Fakes f;
  f.plain_mr = fake_mr(0x2000);
  void* base = reinterpret_cast<void*>(0x5000);
  SUBCASE("no exporter: plain, with nothing to explain") {
    rdma::Registration reg;
    REQUIRE(
        rdma::register_memory(nullptr, base, 64, 0x5000, 1, "x", nullptr, f.calls(), &reg).ok());
    CHECK(reg.mr == f.plain_mr);
    CHECK_FALSE(reg.dmabuf);
    CHECK(reg.fallback_reason.empty());
    CHECK(f.plain.addr == base);
    CHECK(f.plain.iova == 0x5000);
  }
  SUBCASE("the export fails (host memory)") {
    const rdma::ExportDmabuf exporter = [](void*, size_t, int*, uint64_t*) {
      return mori::Status::error("not GPU memory");
    };
    rdma::Registration reg;
    REQUIRE(
        rdma::register_memory(nullptr, base, 64, 0x5000, 1, "x", exporter, f.calls(), &reg).ok());
    CHECK(reg.mr == f.plain_mr);
    CHECK(reg.fallback_reason == "no dma-buf: not GPU memory");
    CHECK(f.dmabuf.count == 0);
  }
  SUBCASE("the NIC refuses the import: the fd is still closed") {
    int exported = -1;
    const rdma::ExportDmabuf exporter = [&](void*, size_t, int* fd, uint64_t* offset) {
      *fd = exported = ::open("/dev/null", O_RDONLY);
      *offset = 0;
      return mori::Status{};
    };
    f.dmabuf_err = EOPNOTSUPP;
    rdma::Registration reg;
    REQUIRE(
        rdma::register_memory(nullptr, base, 64, 0x5000, 1, "x", exporter, f.calls(), &reg).ok());
    CHECK(reg.mr == f.plain_mr);
    CHECK(reg.fallback_reason ==
          std::string("ibv_reg_dmabuf_mr failed: ") + std::strerror(EOPNOTSUPP));
    CHECK(f.dmabuf.count == 1);
    CHECK_FALSE(fd_open(exported));
  }
}

TEST_CASE("memory registration: when both fail, one error gives both causes") {
  Fakes f;
  f.plain_err = EFAULT;
  const rdma::ExportDmabuf exporter = [](void*, size_t, int*, uint64_t*) {
    return mori::Status::error("this HIP runtime has no hipMemGetHandleForAddressRange");
  };
  rdma::Registration reg;
  const auto status = rdma::register_memory(nullptr, reinterpret_cast<void*>(0x5000), 8192, 0x5000,
                                            1, "the symmetric heap", exporter, f.calls(), &reg);
  REQUIRE_FALSE(status.ok());
  CHECK(status.message() ==
        std::string("rdma: registering the symmetric heap (8192 bytes) failed: ibv_reg_mr "
                    "failed: ") +
            std::strerror(EFAULT) +
            "; no dma-buf: this HIP runtime has no hipMemGetHandleForAddressRange (GPU memory "
            "needs dma-buf, Linux 5.12+ and ROCR's hsa_amd_portable_export_dmabuf, or a "
            "peer-memory kernel module)");
  CHECK(reg.mr == nullptr);
  // Without an exporter the error is the plain one alone.
  const auto plain = rdma::register_memory(nullptr, reinterpret_cast<void*>(0x5000), 8, 0x5000, 1,
                                           "an ibuf", nullptr, f.calls(), &reg);
  CHECK(plain.message() ==
        std::string("rdma: registering an ibuf (8 bytes) failed: ibv_reg_mr failed: ") +
            std::strerror(EFAULT));
}
