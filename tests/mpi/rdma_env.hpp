// Helpers of the RDMA engine tests (test_rdma_*.cpp), which ctest runs only as mpi.rdma_<nic>.*:
// MORI_DISABLE_P2P=1 and MORI_DEVICE_NIC=<nic>, so every other PE is reached through the software
// NIC.
#pragma once

#include <cstdlib>
#include <string>

#include "device_harness.hpp"

namespace mori::test {

inline std::string nic_name() {
  const char* v = std::getenv("MORI_DEVICE_NIC");
  return v ? v : "";
}

// The status text each provider's completion parser gives the software NIC's injected failure
// (CompletionStatus::kGeneral) and a bad rkey (kRemoteAccess).
inline std::string injected_status_text() {
  const std::string nic = nic_name();
  if (nic == "ionic") return "local QP operation error";
  if (nic == "bnxt") return "remote operation";
  return "remote operation error";
}
inline std::string remote_access_text() {
  return nic_name() == "bnxt" ? "remote access" : "remote access error";
}

// The QP number the software NIC gives this PE's QP `qp` to PE `pe` (softnic_network.cpp).
inline unsigned softnic_qpn(int pe, int qp, int qps_per_pe) {
  return 0x100 + static_cast<unsigned>(pe * qps_per_pe + qp);
}

}  // namespace mori::test
