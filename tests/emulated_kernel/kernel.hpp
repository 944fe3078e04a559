// The emulated uverbs kernel: what the LD_PRELOAD shim (hooks.cpp) hands to the command handlers.
// rdma-core's libibverbs and libmlx5 run unmodified above it; it stands in for Linux's
// drivers/infiniband/core (uverbs_cmd.c, the uverbs_std_types_*.c objects, verbs.c) and one device
// family's driver below that (mlx5: drivers/infiniband/hw/mlx5; mlx5_driver.cpp). A second family
// (bnxt_re) adds a Driver of its own, chosen by MORI_EMU_FAMILY, without touching the core.
//
// The core answers the write() command ABI only: every ioctl() on the device fails with ENOTTY,
// as on a kernel without the ioctl framework, which libibverbs handles by falling back to write()
// for every command that has a write form (libibverbs/cmd_fallback.c, _execute_ioctl_fallback,
// and device.c, has_ioctl_write). docs/rdma-hardware.md, "The emulated kernel", lists the rest.
#pragma once

#include <rdma/ib_user_verbs.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace mori::emulated_kernel {

// The user's buffers of one write() command (drivers/infiniband/core/uverbs_main.c,
// ib_uverbs_write: the header's sizes split each buffer into the core part and the driver's udata).
struct Udata {
  const uint8_t* in = nullptr;
  size_t in_len = 0;
  uint8_t* out = nullptr;
  size_t out_len = 0;
};

// A CQ as the driver made it from the library's buffer.
struct Cq {
  uint32_t handle = 0;
  uint32_t cqn = 0;
  uint32_t entries = 0;  // a power of two
  uint32_t cqe_size = 0;
  uint64_t buf = 0;  // the library's ring
  uint64_t dbrec = 0;
  int users = 0;  // QPs on it (ib_destroy_cq refuses while a QP uses it)
};

struct Qp {
  uint32_t handle = 0;
  uint32_t qpn = 0;
  uint32_t pd_handle = 0;
  uint32_t send_cq = 0, recv_cq = 0;  // handles
  int state = 0;                      // enum ib_qp_state; RESET at creation
  uint32_t access = 0;                // qp_access_flags
  uint32_t dest_qpn = 0;
  uint32_t sq_psn = 0, rq_psn = 0;
  uint8_t port = 0, path_mtu = 0, max_rd_atomic = 0, max_dest_rd_atomic = 0;
  uint8_t sgid_index = 0;
  bool is_global = false;
  // The rings, from the driver's udata (mlx5: set_user_buf_size and _create_user_qp).
  uint64_t buf = 0;
  uint64_t sq_offset = 0;
  uint32_t sq_wqe_cnt = 0;
  uint32_t rq_wqe_cnt = 0, rq_wqe_shift = 0;
  uint64_t dbrec = 0;
  uint64_t bf_reg = 0;         // this process's mapping of the QP's BlueFlame register
  uint32_t driver_index = 0;   // the driver's (mlx5: the QP's bfreg)
  uint64_t driver_cookie = 0;  // the library's handle the hardware echoes (bnxt: qp_handle)
  uint32_t max_send_wr = 0, max_recv_wr = 0, max_send_sge = 0, max_recv_sge = 0,
           max_inline_data = 0;
  bool sq_sig_all = false;
};

struct Mr {
  uint32_t handle = 0;
  uint32_t pd_handle = 0;
  uint32_t lkey = 0, rkey = 0;
  uint64_t start = 0, length = 0, iova = 0;
  uint32_t access = 0;
};

// One open /dev/infiniband/uverbs0: a ucontext and the objects created through it
// (drivers/infiniband/core/rdma_core.c: each ufile's idr of uobjects, handles numbered from 0).
struct File {
  int fd = -1;
  bool has_context = false;
  int async_fd = -1;
  uint32_t next_handle = 0;
  std::map<uint32_t, uint32_t> pds;  // handle -> pdn (the device-wide PD number)
  std::map<uint32_t, Cq> cqs;
  std::map<uint32_t, Qp> qps;
  std::map<uint32_t, Mr> mrs;
  std::vector<int> comp_channels;
  // The driver's per-context state (mlx5: the bfreg table and UAR pages).
  std::shared_ptr<void> driver;
  struct Mapping {
    uint64_t addr;
    size_t bytes;
  };
  std::map<uint64_t, Mapping> mappings;  // by mmap page offset: the pages the library mapped
};

// A device family's driver: the udata of each command, as the vendor's kernel driver reads and
// writes it. Each returns 0 or a positive errno.
struct Driver {
  const char* name;
  int (*alloc_ucontext)(File& f, const Udata& u);
  int (*alloc_pd)(File& f, uint32_t pdn, const Udata& u);
  int (*create_cq)(File& f, Cq& cq, uint32_t cqe, const Udata& u);
  // Fills the rings of `qp` from the udata (the core has set its caps, CQs and PD).
  int (*create_qp)(File& f, Qp& qp, const Udata& u);
  // mmap(2) of the device at page offset `pgoff`: *addr is the mapping made (fd-less memory).
  int (*mmap)(File& f, uint64_t pgoff, size_t bytes, int prot, void** addr);
  void (*destroy_qp)(File& f, Qp& qp);
  void (*release)(File& f);
};

const Driver& mlx5_driver();
const Driver& bnxt_driver();

// What the core reports and checks for the emulated device of one family (family.cpp; chosen by
// MORI_EMU_FAMILY): its driver, its query_device and query_port answers, the limits the core's
// create and modify commands enforce, and its sysfs identity (sysfs_tree.cpp).
struct SysfsIdentity {
  const char* ibdev;
  uint32_t pci_vendor, pci_device, pci_subsystem;  // pci_device: what the modalias names
  const char* fw_ver;
  const char* board_id;  // null: the driver has no board_id file
  const char* hca_type;
  const char* node_desc;
  uint64_t node_guid, sys_image_guid;
  uint32_t port_cap_flags;
  const char* rate;
  uint32_t gid_tbl_len;
  uint8_t mac[6];
  uint8_t ipv4[4];
  int roce_v2_ipv4_gid_index;
};

struct Limits {
  uint32_t max_qp_wr, max_sge, max_cqe, max_qp_rd_atom, max_qp_init_rd_atom, max_pkeys;
};

struct Family {
  const char* name;  // as MORI_EMU_FAMILY names it
  const Driver& (*driver)();
  void (*query_device)(ib_uverbs_query_device_resp* r);
  void (*query_port)(ib_uverbs_query_port_resp* r);
  Limits limits;
  SysfsIdentity sysfs;
};

// The family of this process (MORI_EMU_FAMILY, mlx5 when unset), and its driver.
const Family& family();
inline const Driver& driver() { return family().driver(); }

// The write() entry: a whole command at `buf` of `len` bytes. Returns len or -1 with errno.
long uverbs_write(File& f, const void* buf, size_t len);

// Destroys what the file still holds, as uverbs_destroy_ufile_hw does at close.
void release_file(File& f);

// The raw libc calls, resolved past the shim (hooks.cpp).
int real_close(int fd);

// Writes the tree libibverbs reads (sysfs_tree.cpp) under `root`; false with *why.
bool write_sysfs_tree(const std::string& root, std::string* why);

// Logs one line to stderr when MORI_EMU_TRACE is set (what the provider asked the kernel).
void trace(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace mori::emulated_kernel
