// The bnxt_re kernel driver's side of each command (drivers/infiniband/hw/bnxt_re/ib_verbs.c), for
// the Thor2 of thor2.hpp, as rdma-core 44's libbnxt_re drives it. That library sends no udata
// with GET_CONTEXT, so this kernel, like one with the "enable variable size WQEs only if the user
// lib supports it" compatibility of bnxt_re_alloc_ucontext (BNXT_RE_COMP_MASK_REQ_UCNTX_VAR_WQE_
// SUPPORT), answers without BNXT_RE_UCNTX_CMASK_HAVE_MODE: the QPs run static 128-byte WQEs,
// although a Thor2 runs variable-size ones for a library that asks (docs/rdma-hardware.md).
// The mmap offsets are those of the rdma_user_mmap_entry scheme: the shared page is the first
// entry (page offset 0), the doorbell page the one alloc_pd inserts.
#include <rdma/bnxt_re-abi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "bnxt_doorbell.hpp"
#include "hca_state.hpp"
#include "kernel.hpp"
#include "thor2.hpp"

namespace mori::emulated_kernel {
namespace {

constexpr uint64_t kShPagePgoff = 0;  // bnxt_re_mmap_entry_insert(uctx, 0, BNXT_RE_MMAP_SH_PAGE)
constexpr uint64_t kDbPagePgoff = 1;  // the UC_DB entry alloc_pd inserts after it
constexpr uint32_t kDpi = 1;          // the context's doorbell page index (bnxt_qplib_alloc_dpi)
constexpr uint32_t kStaticWqeBytes = 128;  // bnxt_re_calc_wqe_sz(6): 2 header slots + 6 SGEs
constexpr uint32_t kReservedWrs = 128;     // BNXT_QPLIB_RESERVED_QP_WRS (static mode's slack)
constexpr uint32_t kPsnBytes = 8;          // struct sq_psn_search, what libbnxt_re uses off P5

struct Context {
  bool has_dpi = false;
  void* db_page = nullptr;
  size_t db_bytes = 0;
};

Context& ctx(File& f) { return *static_cast<Context*>(f.driver.get()); }
size_t page_bytes() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

template <typename T>
void copy_out(const Udata& u, const T& value) {
  if (u.out) std::memcpy(u.out, &value, std::min(u.out_len, sizeof(T)));
}

// Every page of [addr, addr + bytes) is mapped: what ib_umem_get's pinning needs.
bool mapped(uint64_t addr, uint64_t bytes) {
  const uint64_t page = page_bytes();
  unsigned char v;
  for (uint64_t p = addr & ~(page - 1); p < addr + bytes; p += page)
    if (mincore(reinterpret_cast<void*>(p), page, &v) != 0) return false;
  return true;
}

uint32_t roundup_pow_of_two(uint32_t v) {
  uint32_t r = 1;
  while (r < v) r <<= 1;
  return r;
}

// bnxt_re_alloc_ucontext: the ABI version, the shared page, the response from the device's
// attributes: dev_id (the PCI devfn, 0), max_qp, the page size, 32-byte CQEs (sizeof(struct
// cq_base)), max_cqd, and the chip (HAVE_CCTX: chip_num | rev << 16 | metal << 24). A request's
// comp_mask may ask for POW2_DISABLED (0x1) or variable WQEs (0x2): neither is emulated.
int alloc_ucontext(File& f, const Udata& u) {
  if (u.in_len >= sizeof(uint64_t)) {
    uint64_t mask;
    std::memcpy(&mask, u.in, sizeof(mask));
    if (mask & ~uint64_t{0x3}) return EOPNOTSUPP;  // ib_copy_validate_udata_in_cm
    if (mask) return EOPNOTSUPP;
  }
  bnxt_re_uctx_resp resp{};
  resp.dev_id = 0;
  resp.max_qp = thor2::kMaxQp;
  resp.pg_size = static_cast<uint32_t>(page_bytes());
  resp.cqe_sz = thor2::kCqeBytes;
  resp.max_cqd = thor2::kMaxCqe;
  resp.comp_mask = BNXT_RE_UCNTX_CMASK_HAVE_CCTX;
  resp.chip_id0 = thor2::kChipNum;  // rev 0, metal 0
  copy_out(u, resp);
  f.driver = std::make_shared<Context>();
  trace("alloc_ucontext: Thor2 chip 0x%x, static WQEs, %u-byte CQEs", thor2::kChipNum, resp.cqe_sz);
  return 0;
}

// bnxt_re_alloc_pd: the first PD of a context allocates its doorbell page (DPI) and every PD
// names it: pdid, dpi, and dbr, the mmap offset of the doorbell entry.
int alloc_pd(File& f, uint32_t pdn, const Udata& u) {
  Context& c = ctx(f);
  c.has_dpi = true;
  bnxt_re_pd_resp resp{};
  resp.pdid = pdn;
  resp.dpi = kDpi;
  resp.dbr = kDbPagePgoff * page_bytes();
  if (u.out_len < sizeof(resp)) return EFAULT;
  copy_out(u, resp);
  return 0;
}

// bnxt_re_create_cq: the library's ring (cq_va) of bnxt_re_init_depth(cqe + 1) entries (a power of
// two: the library did not ask for POW2_DISABLED), at most max_cq_wqes + 1, pinned (ib_umem_get);
// the response: the CQ id, the consumer index (0) and the start period (phase 1,
// BNXT_QPLIB_QUEUE_START_PERIOD) the first pass of CQEs carries.
int create_cq(File&, Cq& cq, uint32_t cqe, const Udata& u) {
  bnxt_re_cq_req req{};
  if (u.in_len < sizeof(req)) return EINVAL;
  std::memcpy(&req, u.in, sizeof(req));
  cq.entries = std::min(roundup_pow_of_two(cqe + 1), thor2::kMaxCqe + 1);
  cq.cqe_size = thor2::kCqeBytes;
  if (!req.cq_va || !mapped(req.cq_va, uint64_t{cq.entries} * cq.cqe_size)) return EFAULT;
  cq.buf = req.cq_va;
  cq.dbrec = 0;  // no doorbell record: the CQ's consumer index goes to the doorbell page
  cq.cqn = hca::alloc_cqn();
  bnxt_re_cq_resp resp{};
  resp.cqid = cq.cqn;
  resp.tail = 0;
  resp.phase = 1;
  if (u.out_len < sizeof(resp)) return EFAULT;
  copy_out(u, resp);
  return 0;
}

// bnxt_re_create_qp / bnxt_re_init_user_qp for a static-mode RC QP: the SQ at qpsva holds
// roundup_pow_of_two(max_send_wr + 1 + BNXT_QPLIB_RESERVED_QP_WRS) 128-byte WQEs and a PSN-search
// entry for each after them; the RQ at qprva its WQEs (when the QP has one); both pinned; the
// library's qp_handle is what the chip echoes in CQEs. libbnxt_re 44 sizes its ring the same way
// (verbs.c bnxt_re_alloc_queues, with BNXT_RE_FULL_FLAG_DELTA as the slack), which the doorbell's
// WQE index depends on.
int create_qp(File& f, Qp& qp, const Udata& u) {
  if (!ctx(f).has_dpi) return EINVAL;  // no PD yet has mapped a doorbell page
  bnxt_re_qp_req req{};
  if (u.in_len < sizeof(req)) return EINVAL;
  std::memcpy(&req, u.in, sizeof(req));
  const uint32_t wqes = roundup_pow_of_two(qp.max_send_wr + 1 + kReservedWrs);
  const uint64_t sq_bytes = uint64_t{wqes} * (kStaticWqeBytes + kPsnBytes);
  if (!req.qpsva || !mapped(req.qpsva, sq_bytes)) return EFAULT;
  if (qp.max_recv_wr) {
    const uint64_t rq_wqes = roundup_pow_of_two(qp.max_recv_wr + 1);
    if (!req.qprva || !mapped(req.qprva, rq_wqes * kStaticWqeBytes)) return EFAULT;
    qp.rq_wqe_cnt = static_cast<uint32_t>(rq_wqes);
    qp.rq_wqe_shift = 7;
  }
  qp.buf = req.qpsva;
  qp.sq_offset = 0;
  qp.sq_wqe_cnt = wqes;
  qp.dbrec = 0;
  qp.driver_cookie = req.qp_handle;
  // The doorbell the NIC reads: this QP's cell of the watched page (bnxt_doorbell.hpp).
  bnxt::reset_sq_doorbell(qp.qpn);
  qp.bf_reg = reinterpret_cast<uint64_t>(bnxt::sq_doorbell(qp.qpn));
  bnxt_re_qp_resp resp{};
  resp.qpid = qp.qpn;  // libbnxt_re takes the QP number from here (qp->qpid)
  if (u.out_len < sizeof(resp)) return EFAULT;
  copy_out(u, resp);
  return 0;
}

void destroy_qp(File&, Qp&) {}

// bnxt_re_mmap: the shared page (read-write memory) and the doorbell page (uncached MMIO on
// hardware: here the watched page of bnxt_doorbell.cpp), one page each; anything else EINVAL.
int mmap_page(File& f, uint64_t pgoff, size_t bytes, int prot, void** addr) {
  Context& c = ctx(f);
  if (bytes != page_bytes()) return EINVAL;
  void* p = nullptr;
  if (pgoff == kShPagePgoff) {
    p = ::mmap(nullptr, bytes, prot | PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return errno;
  } else if (pgoff == kDbPagePgoff && c.has_dpi && !c.db_page) {
    p = bnxt::map_doorbell_page(bytes);
    if (!p) return errno;
    c.db_page = p;
    c.db_bytes = bytes;
  } else {
    trace("mmap: page offset %llu not emulated", (unsigned long long)pgoff);
    return EINVAL;
  }
  f.mappings[pgoff] = {reinterpret_cast<uint64_t>(p), bytes};
  *addr = p;
  trace("mmap page offset %llu: %p", (unsigned long long)pgoff, p);
  return 0;
}

void release(File& f) {
  if (f.driver && ctx(f).db_page) bnxt::forget_doorbell_page(ctx(f).db_page);
  f.driver.reset();
}

}  // namespace

const Driver& bnxt_driver() {
  static const Driver d{"bnxt_re", alloc_ucontext, alloc_pd,   create_cq,
                        create_qp, mmap_page,      destroy_qp, release};
  return d;
}

}  // namespace mori::emulated_kernel
