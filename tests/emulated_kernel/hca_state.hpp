// The HCA's own state, which every process that opens the emulated device shares, as processes
// share one physical ConnectX: the numbers its firmware hands out (PD, CQ and QP numbers, memory
// keys) and what a NIC must know to carry a request to another process, which QP is where and
// which keys name which memory. A file mapped by every process (MORI_EMU_DIR/hca, made by
// scripts/with-emulated-nic.sh; without MORI_EMU_DIR the state is this process's alone), updated
// under flock(2).
#pragma once

#include <cstdint>
#include <vector>

namespace mori::emulated_kernel::hca {

struct QpEntry {
  uint32_t qpn;
  uint32_t pdn;
  int32_t pid;
  uint32_t state;  // enum ib_qp_state
  uint32_t dest_qpn;
  uint32_t used;
};

struct MrEntry {
  uint32_t key;  // lkey == rkey on mlx5
  uint32_t pdn;
  int32_t pid;
  uint32_t access;
  uint64_t start, iova, length;
  uint32_t used, pad;
};

uint32_t alloc_pdn();
uint32_t alloc_cqn();
// 0 when the table is full.
uint32_t add_qp(uint32_t pdn);
void update_qp(uint32_t qpn, uint32_t state, uint32_t dest_qpn);
void remove_qp(uint32_t qpn);
bool find_qp(uint32_t qpn, QpEntry* out);
// The key of the new region; 0 when the table is full.
uint32_t add_mr(uint32_t pdn, uint32_t access, uint64_t start, uint64_t iova, uint64_t length);
void remove_mr(uint32_t key);
std::vector<MrEntry> mrs();
// Changes with every add_mr and remove_mr (a NIC rereads the keys when it moves).
uint32_t generation();

}  // namespace mori::emulated_kernel::hca
