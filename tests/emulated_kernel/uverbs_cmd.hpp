// The core's command handlers (uverbs_cmd.cpp, uverbs_queues.cpp) and what they are handed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernel.hpp"

namespace mori::emulated_kernel {

// One command, its buffers split as ib_uverbs_write splits them (uverbs_main.c).
struct Command {
  const uint8_t* core_in = nullptr;  // the core request (legacy: after the header, with the
  size_t core_in_len = 0;            // response pointer first)
  uint8_t* core_out = nullptr;       // the core response
  size_t core_out_len = 0;
  Udata udata;  // the driver's part of both
};

// uverbs_cmd.cpp: the ConnectX-7's answers (family.cpp hands them to the core).
void cx7_query_device(ib_uverbs_query_device_resp* r);
void cx7_query_port(ib_uverbs_query_port_resp* r);

// uverbs_queues.cpp
int create_cq(File& f, const Command& c);
int ex_create_cq(File& f, const Command& c);
int destroy_cq(File& f, const Command& c);
int create_qp(File& f, const Command& c);
int ex_create_qp(File& f, const Command& c);
int modify_qp(File& f, const Command& c);
int ex_modify_qp(File& f, const Command& c);
int query_qp(File& f, const Command& c);
int destroy_qp(File& f, const Command& c);

// nic.cpp: the software NIC that executes a QP's WQEs from RTS on, and its end.
void nic_start(File& f, const Qp& qp);
void nic_stop(uint32_t qpn);

}  // namespace mori::emulated_kernel
