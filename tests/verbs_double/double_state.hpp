// The verbs double's internal state: the fake fabric (its devices and every object created on
// them), the one lock that guards it, the refusal log, and the helpers the entry points share.
// Only the double's sources include this; tests use verbs_double.hpp.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mori/state/rdma_endpoint.hpp"
#include "verbs_double.hpp"

namespace verbs_double::internal {

struct Device {
  ibv_device dev{};  // what ibv_get_device_list hands out
  DeviceSpec spec;
};

struct Context {
  ibv_context ctx{};
  Device* device = nullptr;
  uint64_t uar[64] = {};  // the UAR page: every QP's BlueFlame register points into it
};

struct Pd {
  ibv_pd pd{};
  Context* context = nullptr;
  int mrs = 0, qps = 0;
};

struct Mr {
  ibv_mr mr{};
  Pd* pd = nullptr;
  uint64_t iova = 0;  // where the device's addresses in this MR start
  int access = 0;     // ibv_access_flags
};

struct Cq {
  ibv_cq cq{};
  Context* context = nullptr;
  uint32_t entries = 0;  // the ring: mlx5dv_cq.cqe_cnt
  uint32_t cqn = 0;
  std::vector<uint8_t> buf;  // entries * 64 bytes
  uint32_t dbrec[2] = {};
  int qps = 0;
};

struct Qp {
  ibv_qp qp{};
  Context* context = nullptr;
  Pd* pd = nullptr;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  uint32_t wqe_cnt = 0;     // WQEBBs of 64 bytes
  std::vector<uint8_t> sq;  // wqe_cnt * 64 bytes
  uint32_t dbrec[2] = {};
  size_t record = 0;  // its entry in Fabric::history
};

// Objects by the address of the ibv_* struct inside them.
template <class T>
using Table = std::map<const void*, std::unique_ptr<T>>;

struct Fabric {
  std::mutex mutex;
  std::vector<std::unique_ptr<Device>> devices;
  std::map<const void*, std::unique_ptr<ibv_device*[]>> device_lists;
  Table<Context> contexts;
  Table<Pd> pds;
  Table<Mr> mrs;
  Table<Cq> cqs;
  Table<Qp> qps;
  uint32_t next_qpn = 0x100, next_cqn = 0x40, next_key = 0x1000, next_handle = 1;
  std::vector<std::string> refusals;
  std::vector<QpRecord> history;
  // Set while software NICs carry the fabric's traffic (nic_backing.cpp): called, under the
  // lock, after every registration and deregistration, so that the NICs see the new MRs; and
  // served QPs may not be destroyed.
  NicBacking* backing = nullptr;
};

// The one fabric. Every entry point holds its mutex for its whole call.
Fabric& fabric();

template <class T>
T* find(Table<T>& table, const void* key) {
  const auto it = table.find(key);
  return it == table.end() ? nullptr : it->second.get();
}

// Files `obj` in `table` under the address of its ibv_* struct `member`, and returns that address.
template <class T, class V>
V* keep(Table<T>& table, std::unique_ptr<T> obj, V T::* member) {
  V* out = &((*obj).*member);
  table[out] = std::move(obj);
  return out;
}

// Records `reason` and returns `err`: for the calls that return an errno.
int refuse(Fabric& f, int err, std::string reason);
// Records `reason`, sets errno to `err` and returns null: for the creators.
std::nullptr_t refuse_null(Fabric& f, int err, std::string reason);

// True when `port` is not one of `spec`'s ports (numbered from 1).
bool bad_port(const DeviceSpec& spec, uint32_t port);
// "<what> 0 is not a port of mlx5_0 (ports 1..1)".
std::string port_refusal(const char* what, const DeviceSpec& spec, uint32_t port);
bool empty_gid(const uint8_t* raw);

// Bytes of an ibv_mtu (IBV_MTU_1024 -> 1024).
int mtu_bytes(int mtu);
const char* state_name(int state);

// Where a QP's BlueFlame register is: QPs of one context share its UAR page, each with its own
// register (mlx5dv.cpp).
uint64_t* bf_register(const Qp& qp);

// The NIC's own view of an mlx5 QP in RTS, for the software NIC that carries the traffic
// (nic_backing.cpp): its SQ, doorbell record and BlueFlame register, its send CQ's ring and
// doorbell record, from the double's objects, never from what the runtime exported, so that a
// wrong export shows as failed traffic. False, with the reason, when it cannot be served.
bool nic_endpoint_mlx5(Qp& qp, mori::state::RdmaEndpoint* out, std::string* why);

// nic_backing.cpp: the NICs' memory tables changed (an MR came or went).
void memory_changed(Fabric& f);
// Whether a software NIC serves `qp` now (it may not be destroyed then).
bool served(const Fabric& f, const Qp& qp);

// qp_rules.cpp: "" when the kernel lets an RC QP go from `cur` to `next` with `mask`, else why not
// ("missing required attribute IBV_QP_RQ_PSN").
std::string check_rc_transition(ibv_qp_state cur, ibv_qp_state next, int mask);

}  // namespace verbs_double::internal
