// The mlx5 kernel driver's side of each command (drivers/infiniband/hw/mlx5: main.c, cq.c, qp.c),
// for a ConnectX-7 with 4 KiB UARs. The kernel emulated is one without dynamic UARs
// (MLX5_LIB_CAP_DYN_UAR is ignored, as mlx5_ib_alloc_ucontext did before it honoured lib_uar_dyn):
// libmlx5 then asks for the static BlueFlame registers and maps their UAR pages itself, and
// needs no ioctl() (mlx5dv_devx_alloc_uar would). Everything else follows the functions cited.
#include <rdma/mlx5-abi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "connectx7.hpp"
#include "hca_state.hpp"
#include "kernel.hpp"

namespace mori::emulated_kernel {
namespace {

constexpr uint32_t kNonFpBfregsPerUar = 2;   // MLX5_NON_FP_BFREGS_PER_UAR
constexpr uint32_t kBfregsPerUar = 4;        // MLX5_BFREGS_PER_UAR
constexpr uint32_t kDefaultUidx = 0xffffff;  // MLX5_IB_DEFAULT_UIDX

// A ucontext's mlx5 state: mlx5_bfreg_info and the ucontext's cqe_version.
struct Context {
  uint32_t total_bfregs = 0;
  uint32_t low_latency_bfregs = 0;
  uint32_t num_sys_pages = 0;
  std::vector<uint32_t> count;  // QPs on each bfreg
  uint8_t cqe_version = 0;
  bool devx = false;
};

Context& ctx(File& f) { return *static_cast<Context*>(f.driver.get()); }

// Every mlx5 udata struct is copied as far as both sides know it; whatever the library sends past
// what the kernel knows must be zero (ib_is_udata_cleared).
template <typename T>
bool copy_in(const Udata& u, T* out, size_t at_least) {
  *out = T{};
  if (u.in_len < at_least) return false;
  std::memcpy(out, u.in, std::min(u.in_len, sizeof(T)));
  for (size_t i = sizeof(T); i < u.in_len; ++i)
    if (u.in[i]) return false;
  return true;
}

template <typename T>
void copy_out(const Udata& u, const T& value) {
  if (u.out) std::memcpy(u.out, &value, std::min(u.out_len, sizeof(T)));
}

// mlx5_ib_alloc_ucontext and calc_total_bfregs: the static bfregs, aligned to the system page's
// two non-fast-path registers, one more than the low-latency ones at least; the response from
// the ConnectX-7's caps.
int alloc_ucontext(File& f, const Udata& u) {
  mlx5_ib_alloc_ucontext_req_v2 req;
  if (!copy_in(u, &req, offsetof(mlx5_ib_alloc_ucontext_req_v2, flags))) return EINVAL;
  if (req.flags & ~uint32_t{MLX5_IB_ALLOC_UCTX_DEVX}) return EOPNOTSUPP;
  if (req.comp_mask || req.reserved0 || req.reserved1 || req.reserved2) return EOPNOTSUPP;
  const long page = sysconf(_SC_PAGESIZE);
  const bool uar_4k = req.lib_caps & MLX5_LIB_CAP_4K_UAR;
  const uint32_t uars_per_page = uar_4k ? static_cast<uint32_t>(page / 4096) : 1;
  const uint32_t per_page = uars_per_page * kNonFpBfregsPerUar;
  const uint32_t total = (req.total_num_bfregs + per_page - 1) / per_page * per_page;
  if (total == 0 || req.num_low_latency_bfregs > total - 1) return EINVAL;
  auto c = std::make_shared<Context>();
  c->total_bfregs = total;
  c->low_latency_bfregs = req.num_low_latency_bfregs;
  c->num_sys_pages = total / per_page;
  c->count.assign(total, 0);
  // min(req.max_cqe_version, the cap (1)) on hardware. This kernel answers 0, as for a device
  // whose cap is 0: with version 1 libmlx5 finds a CQE's QP by the user index in srqn_uidx, which
  // the software NIC does not write (docs/rdma-hardware.md, "The emulated kernel").
  c->cqe_version = 0;
  c->devx = req.flags & MLX5_IB_ALLOC_UCTX_DEVX;  // mlx5_ib_devx_create: the caps allow a uid
  mlx5_ib_alloc_ucontext_resp resp{};
  resp.qp_tab_size = cx7::kMaxQp;
  resp.bf_reg_size = 1u << cx7::kLogBfRegSize;
  resp.tot_bfregs = total;
  resp.cache_line_size = 64;
  resp.max_sq_desc_sz = cx7::kMaxWqeSzSq;
  resp.max_rq_desc_sz = cx7::kMaxWqeSzRq;
  resp.max_send_wqebb = cx7::kMaxQpWr;
  resp.max_recv_wr = cx7::kMaxQpWr;
  resp.max_srq_recv_wr = cx7::kMaxQpWr;
  resp.num_ports = 1;
  resp.comp_mask = MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET;
  resp.cqe_version = c->cqe_version;
  resp.cmds_supp_uhw = MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE | MLX5_USER_CMDS_SUPP_UHW_CREATE_AH;
  resp.eth_min_inline = MLX5_USER_INLINE_MODE_NONE;  // mlx5_query_min_inline + 1: not required
  resp.hca_core_clock_offset = 0x1000 % page;        // internal_timer_h in the init segment
  resp.log_uar_size = uar_4k ? 12 : static_cast<uint32_t>(__builtin_ctzl(page));
  resp.num_uars_per_page = uars_per_page;
  resp.response_length = static_cast<uint32_t>(std::min(u.out_len, sizeof(resp)));
  if (u.out_len < offsetof(mlx5_ib_alloc_ucontext_resp, cqe_version)) return EINVAL;
  copy_out(u, resp);
  f.driver = c;
  trace("alloc_ucontext: %u static bfregs (%u low latency) on %u UAR pages, cqe_version %u%s",
        total, c->low_latency_bfregs, c->num_sys_pages, c->cqe_version, c->devx ? ", devx" : "");
  return 0;
}

// mlx5_ib_alloc_pd: the PD number in the udata.
int alloc_pd(File&, uint32_t pdn, const Udata& u) {
  mlx5_ib_alloc_pd_resp resp{pdn};
  copy_out(u, resp);
  return 0;
}

// A fault switch for tests: MORI_EMU_UNPINNABLE=<begin>-<end> (hex addresses, read at each
// create) is memory that ib_umem_get cannot pin, as a GPU's VRAM without a peer-memory module
// (pin_user_pages_fast refuses VM_IO | VM_PFNMAP mappings with EFAULT, which create_cq_user and
// _create_user_qp return). A ring or doorbell record that overlaps it is refused so.
bool unpinnable(uint64_t addr, uint64_t bytes) {
  const char* range = std::getenv("MORI_EMU_UNPINNABLE");
  unsigned long long begin = 0, end = 0;
  if (!range || std::sscanf(range, "%llx-%llx", &begin, &end) != 2) return false;
  return addr < end && addr + bytes > begin;
}

// create_cq_user (cq.c): the library's ring and doorbell record, 64- or 128-byte CQEs, known
// flags only, no CQE compression (not emulated); mlx5_ib_create_cq: roundup_pow_of_two(cqe + 1)
// entries, the CQ number in the udata.
int create_cq(File&, Cq& cq, uint32_t cqe, const Udata& u) {
  mlx5_ib_create_cq cmd;
  if (!copy_in(u, &cmd, offsetof(mlx5_ib_create_cq, flags))) return EINVAL;
  constexpr uint32_t kFlags = MLX5_IB_CREATE_CQ_FLAGS_CQE_128B_PAD |
                              MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX |
                              MLX5_IB_CREATE_CQ_FLAGS_REAL_TIME_TS;
  if (cmd.flags & ~kFlags) return EINVAL;
  if ((cmd.cqe_size != 64 && cmd.cqe_size != 128) || cmd.reserved0 || cmd.reserved1) return EINVAL;
  if (cmd.cqe_comp_en) return EOPNOTSUPP;
  if (cmd.flags & MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX) return EINVAL;  // a dynamic UAR
  if (!cmd.buf_addr || !cmd.db_addr) return EFAULT;  // ib_umem_get, mlx5_ib_db_map_user
  cq.entries = 1;
  while (cq.entries < cqe + 1) cq.entries <<= 1;
  cq.cqe_size = cmd.cqe_size;
  if (unpinnable(cmd.buf_addr, uint64_t{cq.entries} * cq.cqe_size) || unpinnable(cmd.db_addr, 8))
    return EFAULT;
  cq.buf = cmd.buf_addr;
  cq.dbrec = cmd.db_addr;
  cq.cqn = hca::alloc_cqn();
  if (u.out_len < sizeof(uint32_t)) return EFAULT;
  std::memcpy(u.out, &cq.cqn, sizeof(uint32_t));
  return 0;
}

// qp.c alloc_bfreg: a high-class register (one QP each) while any is free, else the least used
// medium one, else bfreg 0 (shared, locked); first_med_bfreg is 1, first_hi_bfreg follows the
// medium ones, which are the total less the low-latency ones and the one non-BlueFlame register.
uint32_t alloc_bfreg(Context& c) {
  const int med = std::max<int>(static_cast<int>(c.total_bfregs - c.low_latency_bfregs) - 1, 0);
  const uint32_t first_hi = static_cast<uint32_t>(med) + 1;
  for (uint32_t i = first_hi; i < c.total_bfregs; ++i)
    if (!c.count[i]) return c.count[i]++, i;
  if (med > 0) {
    uint32_t min = 1;
    for (uint32_t i = 1; i < first_hi; ++i) {
      if (c.count[i] < c.count[min]) min = i;
      if (!c.count[min]) break;
    }
    return c.count[min]++, min;
  }
  return c.count[0]++, 0;
}

// The library's bfreg numbering counts the fast-path registers too (adjust_bfregn).
uint32_t adjust_bfregn(uint32_t n) {
  return n / kNonFpBfregsPerUar * kBfregsPerUar + n % kNonFpBfregsPerUar;
}

// Every page of [addr, addr + bytes) is mapped: what ib_umem_get's pinning needs.
bool mapped(uint64_t addr, uint64_t bytes) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  unsigned char v;
  for (uint64_t p = addr & ~(page - 1); p < addr + bytes; p += page)
    if (mincore(reinterpret_cast<void*>(p), page, &v) != 0) return false;
  return true;
}

// create_user_qp and _create_user_qp (qp.c), with get_qp_user_index, set_rq_size and
// set_user_buf_size: the RQ only with receives (qp_has_rq), its size and stride from the udata;
// the SQ a power of two of 64-byte WQEBBs within log_max_qp_sz; the buffer the RQ then the SQ;
// the doorbell record; a BlueFlame register from alloc_bfreg.
int create_qp(File& f, Qp& qp, const Udata& u) {
  Context& c = ctx(f);
  mlx5_ib_create_qp cmd;
  if (!copy_in(u, &cmd, offsetof(mlx5_ib_create_qp, sq_buf_addr))) return EINVAL;
  constexpr uint32_t kRcFlags = MLX5_QP_FLAG_SIGNATURE | MLX5_QP_FLAG_SCATTER_CQE |
                                MLX5_QP_FLAG_ALLOW_SCATTER_CQE |
                                MLX5_QP_FLAG_PACKET_BASED_CREDIT_MODE;
  if (cmd.flags & ~(kRcFlags | MLX5_QP_FLAG_BFREG_INDEX | MLX5_QP_FLAG_UAR_PAGE_INDEX))
    return EINVAL;
  // A register the library chose names a dynamic one; this kernel has none.
  if (cmd.flags & (MLX5_QP_FLAG_BFREG_INDEX | MLX5_QP_FLAG_UAR_PAGE_INDEX)) return EINVAL;
  if (!c.cqe_version ? cmd.uidx != kDefaultUidx : cmd.uidx > 0xffffff) return EINVAL;
  const bool has_rq = qp.max_recv_wr != 0;
  if (has_rq) {
    if (cmd.rq_wqe_shift > 32) return EINVAL;
    const uint32_t sig = (cmd.flags & MLX5_QP_FLAG_SIGNATURE) ? 1 : 0;
    if ((1u << cmd.rq_wqe_shift) / 16 < sig) return EINVAL;
    qp.rq_wqe_cnt = cmd.rq_wqe_count;
    qp.rq_wqe_shift = cmd.rq_wqe_shift;
  }
  if (cmd.sq_wqe_count & (cmd.sq_wqe_count - 1)) return EINVAL;
  if (cmd.sq_wqe_count > cx7::kMaxQpWr) return EINVAL;
  qp.sq_wqe_cnt = cmd.sq_wqe_count;
  qp.sq_offset = uint64_t{qp.rq_wqe_cnt} << qp.rq_wqe_shift;
  const uint64_t buf_size = qp.sq_offset + (uint64_t{qp.sq_wqe_cnt} << 6);
  if (!cmd.buf_addr || !mapped(cmd.buf_addr, buf_size)) return EFAULT;
  if (!cmd.db_addr || !mapped(cmd.db_addr, 8)) return EFAULT;
  if (unpinnable(cmd.buf_addr, buf_size) || unpinnable(cmd.db_addr, 8)) return EFAULT;
  qp.buf = cmd.buf_addr;
  qp.dbrec = cmd.db_addr;
  const uint32_t bfregn = alloc_bfreg(c);
  qp.driver_index = bfregn;
  mlx5_ib_create_qp_resp resp{};
  resp.bfreg_index = adjust_bfregn(bfregn);
  // Where the library's mapping of that register is (mlx5.c mlx5_set_context: bfs[i].reg).
  const uint32_t uar_page = bfregn / kNonFpBfregsPerUar;
  for (const auto& [pgoff, m] : f.mappings)
    if ((pgoff & 0xff) == uar_page && (pgoff >> 8) != MLX5_IB_MMAP_CORE_CLOCK)
      qp.bf_reg = m.addr + 0x800 + (bfregn % kNonFpBfregsPerUar) * (1u << cx7::kLogBfRegSize);
  if (u.out_len < sizeof(uint32_t)) return EFAULT;
  copy_out(u, resp);
  return 0;
}

// free_bfreg: the QP's register is one QP less used.
void destroy_qp(File& f, Qp& qp) {
  if (f.driver && ctx(f).count[qp.driver_index]) ctx(f).count[qp.driver_index]--;
}

// mlx5_ib_mmap (main.c): the command in bits 8..15 of the page offset, the index below.
// uar_mmap maps one static UAR page (regular, write-combining or non-cached: all plain memory
// here, which the software NIC does not read); MLX5_IB_MMAP_CORE_CLOCK maps the clock page
// read-only. Anything else is refused as the kernel refuses it.
int mmap_page(File& f, uint64_t pgoff, size_t bytes, int prot, void** addr) {
  Context& c = ctx(f);
  const uint64_t command = (pgoff >> 8) & 0xff, index = pgoff & 0xff;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  switch (command) {
    case MLX5_IB_MMAP_REGULAR_PAGE:
    case MLX5_IB_MMAP_WC_PAGE:
    case MLX5_IB_MMAP_NC_PAGE:
      if (bytes != page || index >= c.num_sys_pages) return EINVAL;
      break;
    case MLX5_IB_MMAP_CORE_CLOCK:
      if (bytes != page) return EINVAL;
      if (prot & PROT_WRITE) return EPERM;
      break;
    default:
      trace("mmap: command %llu not emulated", (unsigned long long)command);
      return EINVAL;
  }
  void* p = ::mmap(nullptr, bytes, prot | PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return errno;
  f.mappings[pgoff] = {reinterpret_cast<uint64_t>(p), bytes};
  *addr = p;
  trace("mmap command %llu index %llu: %p", (unsigned long long)command, (unsigned long long)index,
        p);
  return 0;
}

void release(File& f) { f.driver.reset(); }

}  // namespace

const Driver& mlx5_driver() {
  static const Driver d{"mlx5",    alloc_ucontext, alloc_pd,   create_cq,
                        create_qp, mmap_page,      destroy_qp, release};
  return d;
}

}  // namespace mori::emulated_kernel
