// VerbsNetwork::open with MORI_DEVICE_NIC=bnxt|ionic on the verbs double: with a device, open
// loads the vendor's direct-verbs library (src/rdma/vendor_dv.hpp; here the stand-ins of
// tests/unit/fake_dv, or the double's own ionic direct verbs). BNXT then fails with the loader's
// error or with the first refusal of its calls; Ionic opens on an Ionic device and fails on another family's;
// without a device, the library is not looked for. Exact texts. (One PE and no peer: the device
// is opened, its PD prepared, and no queue pair created; test_ionic.cpp has the queue pairs.)
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "rdma/verbs_network.hpp"
#include "thread_bootstrap.hpp"
#include "two_pes.hpp"
#include "verbs_double.hpp"

namespace rdma = mori::rdma;
namespace vd = verbs_double;

namespace {

struct Opened {
  mori::Status status;
  bool no_devices = false;
  bool network = false;
};

// One PE (no peer) opens with `nic` and `dv_library`.
Opened open_one(const std::string& nic, const std::string& dv_library) {
  vd::ThreadHub hub(1);
  vd::ThreadBootstrap boot(hub, 0);
  std::vector<uint8_t> heap(1 << 16);
  rdma::VerbsConfig c;
  c.nic = nic;
  c.dv_library = dv_library;
  c.needs_rdma = {false};
  c.heap_base = heap.data();
  c.heap_bytes = heap.size();
  std::unique_ptr<rdma::VerbsNetwork> net;
  Opened o;
  o.status = rdma::VerbsNetwork::open(c, boot, &net, &o.no_devices);
  o.network = net != nullptr;
  return o;
}

std::string open_error(const std::string& nic, const std::string& dv_library) {
  const Opened o = open_one(nic, dv_library);
  CHECK_FALSE(o.status.ok());
  CHECK_FALSE(o.network);
  CHECK_FALSE(o.no_devices);
  return o.status.message();
}

}  // namespace

TEST_CASE("vendor nic: bnxt loads a complete library and open fails on the first call it refuses") {
  // The fake library's functions all fail with -1: the first BNXT call, for the doorbell page.
  vd::reset({vd::roce_mlx5("mlx5_0", 1)});
  CHECK(open_error("bnxt", MORI_FAKE_DV_COMPLETE) ==
        "rdma: bnxt_re_dv_get_default_db_region for mlx5_0 failed: error -1");
}

TEST_CASE("vendor nic: ionic opens an Ionic device through the ionic direct verbs") {
  vd::reset({vd::roce_ionic("ionic_0", 1)});
  const Opened o = open_one("ionic", MORI_VERBS_DOUBLE_IONIC);
  CHECK_MESSAGE(o.status.ok(), o.status.message());
  CHECK(o.network);
  CHECK_FALSE(o.no_devices);
  CHECK(vd::refusals().empty());
  vd::check_nothing_alive();
}

TEST_CASE("vendor nic: each family refuses another family's device") {
  vd::reset({vd::roce_mlx5("mlx5_0", 1)});
  CHECK(open_error("ionic", MORI_VERBS_DOUBLE_IONIC) ==
        "rdma: mlx5_0 is not an Ionic device (ionic_dv_get_ctx: Operation not permitted), but "
        "MORI_DEVICE_NIC=ionic");
  CHECK(vd::last_refusal() == "ionic_dv_get_ctx: mlx5_0 is not an ionic device");
  vd::check_nothing_alive();
  vd::reset({vd::roce_mlx5("mlx5_0", 1)});
  CHECK(open_error("bnxt", MORI_VERBS_DOUBLE_BNXT) ==
        "rdma: bnxt_re_dv_get_default_db_region for mlx5_0 failed: Operation not supported");
  CHECK(vd::last_refusal() == "bnxt_re_dv_get_default_db_region: mlx5_0 is not a bnxt_re device");
  vd::check_nothing_alive();
  vd::reset({vd::roce_ionic("ionic_0", 1)});
  CHECK(open_error("mlx5", "") ==
        "rdma: ionic_0 is not an mlx5 device: only MLX5 queue pairs can be exported to the GPU");
}

TEST_CASE("vendor nic: open returns the loader's error for an incomplete or absent library") {
  vd::reset({vd::roce_mlx5("mlx5_0", 1)});
  CHECK(open_error("bnxt", MORI_FAKE_DV_INCOMPLETE) == std::string("MORI_DEVICE_NIC=bnxt: ") +
                                                           MORI_FAKE_DV_INCOMPLETE +
                                                           " has no bnxt_re_dv_create_qp");
  const std::string message = open_error("ionic", "/nonexistent/mori-test/libionic.so");
  CHECK(message.rfind("MORI_DEVICE_NIC=ionic: /nonexistent/mori-test/libionic.so (AMD's ionic "
                      "direct verbs) not found: /nonexistent/mori-test/libionic.so: ",
                      0) == 0);
  CHECK(message.find("; install the NIC vendor's rdma-core or libionic") != std::string::npos);
}

TEST_CASE("vendor nic: without devices the library is not needed") {
  vd::reset({});
  const Opened o = open_one("bnxt", "/nonexistent/mori-test/libbnxt_re.so");
  CHECK_MESSAGE(o.status.ok(), o.status.message());
  CHECK(o.no_devices);
  CHECK_FALSE(o.network);
}
