// The direct-verbs interfaces of BNXT (Broadcom bnxt_re) and Ionic (AMD Pensando) NICs, resolved
// at run time: rdma-core 44 has neither, so nothing here is linked at build time. A VendorDv
// dlopens the family's library (vendor_dv.cpp) and resolves every function an IBGDA exporter
// calls: create the queues on memory it registers, read back their ids, and find the doorbell
// page. Both exports through them are built: verbs_export_ionic.cpp and verbs_export_bnxt.cpp
// (docs/rdma-hardware.md).
//
// These are this project's own declarations of published facts: names, prototypes and the layouts
// of the structs the functions fill. Sources, each checked against the text named:
//   BNXT  Broadcom's libbnxt_re header bnxt_re_dv.h as ROCm/mori carries it
//         (include/mori/application/transport/rdma/providers/bnxt/bnxt_re_dv.h), and rdma-core's
//         own (linux-rdma/rdma-core providers/bnxt_re/bnxt_re_dv.h, bnxt_re.map: BNXT_RE_1.1);
//         the set ROCm/mori requires: BnxtDvApi::Load in
//         include/mori/application/transport/rdma/providers/dv_loader.hpp; the calls:
//         src/application/transport/rdma/providers/bnxt/bnxt.cpp there, and
//         ROCm/rocSHMEM src/gda/bnxt/backend_gda_bnxt.cpp (initialize_gpu_qp, create_cqs).
//   Ionic AMD's ionic_dv.h as ROCm/mori carries it (.../providers/ionic/ionic_dv.h) and
//         rdma-core's (providers/ionic/ionic_dv.h, libionic.map IONIC_1.1, man pages
//         ionic_dv_get_ctx.3.md, ionic_dv_get_qp.3.md at 37bd52f7, rdma-core pull request 1771);
//         the set required: IonicDvApi::Load in dv_loader.hpp; the calls: ROCm/mori
//         src/application/transport/rdma/providers/ionic/ionic.cpp.
// The attribute structs that create BNXT queues (bnxt_re_dv_umem_reg_attr, _cq_init_attr,
// _qp_init_attr) have Broadcom's layout, from the bnxt_re_dv.h ROCm/mori carries: rdma-core's main
// branch has no bnxt_re direct-verbs header, and the layouts of later drafts differ. A library
// built from another layout would misread them; nothing here can detect that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mori/status.hpp"

struct ibv_context;
struct ibv_pd;
struct ibv_cq;
struct ibv_qp;
struct ibv_qp_attr;
struct ibv_srq;

extern "C" {

// ---- BNXT: bnxt_re_dv.h -------------------------------------------------------------------------
// Filled by bnxt_re_dv_get_default_db_region / bnxt_re_dv_alloc_db_region: dbr is the mapped
// doorbell page, dpi its index (rdma-core bnxt_re_dv.h, identical in Broadcom's).
struct bnxt_re_dv_db_region_attr {
  uint32_t handle;
  uint32_t dpi;
  uint64_t umdbr;
  uint64_t* dbr;
};
// Filled by bnxt_re_dv_init_obj (Broadcom's bnxt_re_dv.h): the queue ids the GPU's WQEs and
// doorbells carry. rocSHMEM's initialize_gpu_qp takes the CQ id from cqn and the SQ id from
// ibv_qp::qp_num.
struct bnxt_re_dv_qp {
  uint64_t wqe_cnt;
  uint64_t comp_mask;
};
struct bnxt_re_dv_cq {
  uint32_t cqn;
  uint32_t cqe_size;
  uint64_t comp_mask;
};
struct bnxt_re_dv_obj {
  struct {
    ibv_qp* in;
    bnxt_re_dv_qp* out;
  } qp;
  struct {
    ibv_cq* in;
    bnxt_re_dv_cq* out;
  } cq;
  struct {
    void* in;  // ibv_srq*, bnxt_re_dv_srq*: unused here
    void* out;
  } srq;
  struct {
    void* in;  // ibv_ah*, bnxt_re_dv_ah*
    void* out;
  } ah;
  struct {
    void* in;  // ibv_pd*, bnxt_re_dv_pd*
    void* out;
  } pd;
};
// Broadcom's layouts (bnxt_re_dv.h as ROCm/mori carries it), used by verbs_export_bnxt.cpp.
// Registers [addr, addr + size) for the NIC; bnxt_re_dv_umem_reg returns the handle.
struct bnxt_re_dv_umem_reg_attr {
  void* addr;
  size_t size;
  uint32_t access_flags;  // IBV_ACCESS_*
  uint64_t pgsz_bitmap;
  uint64_t comp_mask;
  int dmabuf_fd;  // with comp_mask BNXT_RE_DV_UMEM_FLAGS_DMABUF
};
// A CQ of ncqe entries on a registered umem, from cq_umem_offset.
struct bnxt_re_dv_cq_init_attr {
  uint64_t cq_handle;
  void* umem_handle;
  uint64_t cq_umem_offset;
  uint32_t ncqe;
};
// A QP: the standard capabilities, then the rings on registered umems. sq_len counts the bytes of
// the SQ's sq_slots 16-byte slots and of the sq_npsn entries of sq_psn_sz bytes (the MSN table)
// that follow them; sq_wqe_sz is the bytes of one WQE; rq_* likewise without a table.
struct bnxt_re_dv_qp_init_attr {
  uint32_t qp_type;  // enum ibv_qp_type
  uint32_t max_send_wr;
  uint32_t max_recv_wr;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
  ibv_cq* send_cq;
  ibv_cq* recv_cq;
  ibv_srq* srq;
  uint64_t qp_handle;
  void* dbr_handle;  // null: the context's default doorbell region
  void* sq_umem_handle;
  uint64_t sq_umem_offset;
  uint32_t sq_len;
  uint32_t sq_slots;
  void* rq_umem_handle;
  uint64_t rq_umem_offset;
  uint32_t sq_wqe_sz;
  uint32_t sq_psn_sz;
  uint32_t sq_npsn;
  uint32_t rq_len;
  uint32_t rq_slots;
  uint32_t rq_wqe_sz;
  uint64_t comp_mask;
};

// ---- Ionic: ionic_dv.h --------------------------------------------------------------------------
// Filled by ionic_dv_get_ctx: the doorbell page and the queue types that select a doorbell in it.
struct ionic_dv_ctx {
  void* db_page;
  uint64_t* db_ptr;
  uint8_t sq_qtype;
  uint8_t rq_qtype;
  uint8_t cq_qtype;
};
// One ring as ionic_dv_get_qp and ionic_dv_get_cq describe it: buffer, bytes, the doorbell value's
// fixed part (the queue id), the index mask and log2 depth and stride.
struct ionic_dv_queue {
  void* ptr;
  size_t size;
  uint64_t db_val;
  uint16_t mask;
  uint8_t depth_log2;
  uint8_t stride_log2;
};
struct ionic_dv_cq {
  ionic_dv_queue q;
};
struct ionic_dv_qp {
  ionic_dv_queue rq;
  ionic_dv_queue sq;
};

}  // extern "C"

namespace mori::rdma {

// Broadcom's bnxt_re_dv_init_obj object types (enum bnxt_re_roce_dv_obj_type).
inline constexpr uint64_t kBnxtDvObjQp = 1 << 0;
inline constexpr uint64_t kBnxtDvObjCq = 1 << 1;

// The BNXT functions, in the order they are resolved: X(member, return type, parameters), the
// symbol being bnxt_re_dv_<member>. Prototypes as in Broadcom's bnxt_re_dv.h; umem handles are
// void* there (rdma-core's newest header changes them).
#define MORI_FOR_EACH_BNXT_DV(X)                                                           \
  X(umem_reg, void*, (ibv_context*, bnxt_re_dv_umem_reg_attr*))                            \
  X(umem_dereg, int, (void* umem))                                                         \
  X(create_cq, ibv_cq*, (ibv_context*, bnxt_re_dv_cq_init_attr*))                          \
  X(destroy_cq, int, (ibv_cq*))                                                            \
  X(create_qp, ibv_qp*, (ibv_pd*, bnxt_re_dv_qp_init_attr*))                               \
  X(destroy_qp, int, (ibv_qp*))                                                            \
  X(modify_qp, int, (ibv_qp*, ibv_qp_attr*, int attr_mask, uint32_t type, uint32_t value)) \
  X(init_obj, int, (bnxt_re_dv_obj*, uint64_t obj_type))                                   \
  X(get_default_db_region, int, (ibv_context*, bnxt_re_dv_db_region_attr*))

// The Ionic functions likewise, the symbol being ionic_dv_<member>.
#define MORI_FOR_EACH_IONIC_DV(X)                                        \
  X(get_ctx, int, (ionic_dv_ctx*, ibv_context*))                         \
  X(get_qp, int, (ionic_dv_qp*, ibv_qp*))                                \
  X(get_cq, int, (ionic_dv_cq*, ibv_cq*, uint8_t udma_idx))              \
  X(qp_get_udma_idx, uint8_t, (ibv_qp*))                                 \
  X(pd_set_sqcmb, int, (ibv_pd*, bool enable, bool expdb, bool require)) \
  X(pd_set_rqcmb, int, (ibv_pd*, bool enable, bool expdb, bool require)) \
  X(pd_set_udma_mask, int, (ibv_pd*, uint8_t udma_mask))

#define MORI_DV_FUNCTION_POINTER(member, ret, params) ret(*member) params = nullptr;
struct BnxtDv {
  MORI_FOR_EACH_BNXT_DV(MORI_DV_FUNCTION_POINTER)
};
struct IonicDv {
  MORI_FOR_EACH_IONIC_DV(MORI_DV_FUNCTION_POINTER)
};
#undef MORI_DV_FUNCTION_POINTER

// The libraries a family's loader tries, in order: Broadcom's names as ROCm/mori's BnxtDvApi
// tries them; libionic.so as ROCm/mori and rocSHMEM open it, then the runtime name libionic.so.1.
std::vector<std::string> default_dv_libraries(const std::string& nic);

// A loaded direct-verbs library. Closing it (the destructor) invalidates the function pointers.
class VendorDv {
 public:
  // Loads the library of `nic` ("bnxt" or "ionic"): the first of `candidates` that dlopen accepts
  // (names as dlopen searches them, or paths), or default_dv_libraries(nic) when `candidates` is
  // empty; then resolves every function. Errors, one line each:
  //   MORI_DEVICE_NIC=bnxt: libbnxt_re.so (Broadcom's bnxt_re direct verbs) not found: <dlerror>;
  //   install the NIC vendor's rdma-core or libbnxt_re   (dlerror of the first candidate)
  //   MORI_DEVICE_NIC=bnxt: /usr/lib/libbnxt_re.so has no bnxt_re_dv_create_qp
  //   (every missing function, comma-separated)
  static Status load(const std::string& nic, const std::vector<std::string>& candidates,
                     std::unique_ptr<VendorDv>* out);
  ~VendorDv();
  VendorDv(const VendorDv&) = delete;
  VendorDv& operator=(const VendorDv&) = delete;

  // The file loaded: dlinfo's path for it when dlopen found it by name, else the candidate.
  const std::string& path() const { return path_; }
  const BnxtDv& bnxt() const { return bnxt_; }     // zero unless nic was "bnxt"
  const IonicDv& ionic() const { return ionic_; }  // zero unless nic was "ionic"

 private:
  VendorDv() = default;
  void* handle_ = nullptr;
  std::string path_;
  BnxtDv bnxt_{};
  IonicDv ionic_{};
};

}  // namespace mori::rdma
