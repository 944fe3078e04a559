// rdma devices: MORI_RDMA_DEVICES parsing and device selection with their exact error texts, and
// VerbsNetwork::open on this machine, which has no RDMA device (ibv_get_device_list returns NULL
// with ENOSYS), through a one-PE bootstrap.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "rdma/device_filter.hpp"
#include "rdma/verbs_network.hpp"

namespace rdma = mori::rdma;
using Mode = rdma::DeviceFilter::Mode;

// The geometry QPs are created and exported with (provider/*_defs.hpp, said once for the providers
// and the runtime), pinned to the drivers' numbers: mlx5's 28 inline bytes in one WQEBB
// (providers/mlx5/qp.c); Ionic's 64-byte entries for max_inline_data 32 and one SGE
// (ionic_v1_send_wqe_min_size) and 32-byte CQEs; BNXT's 3 slots of 16 bytes per WQE, 16 inline
// bytes, 32-byte CQEs and 8-byte MSN entries (bnxt_re_msns).
using mori::provider::BnxtGeometry;
using mori::provider::IonicGeometry;
using mori::provider::Mlx5Geometry;
static_assert(Mlx5Geometry::kWqeBytes == 64 && Mlx5Geometry::kMaxInlineBytes == 28 &&
              Mlx5Geometry::kCqeBytes == 64);
static_assert(IonicGeometry::kWqeBytes == 64 && IonicGeometry::kMaxInlineBytes == 32 &&
              IonicGeometry::kCqeBytes == 32);
static_assert(BnxtGeometry::kWqeSlots == 3 && BnxtGeometry::kSlotBytes == 16 &&
              BnxtGeometry::kMaxInlineBytes == 16 && BnxtGeometry::kCqeBytes == 32 &&
              BnxtGeometry::kMsnEntryBytes == 8 && BnxtGeometry::kMaxSqWqes == 16384);

namespace {

rdma::DeviceFilter parse_ok(const char* text) {
  rdma::DeviceFilter f;
  const mori::Status s = rdma::parse_device_filter(text, &f);
  REQUIRE_MESSAGE(s.ok(), s.message());
  return f;
}

std::string parse_error(const char* text) {
  rdma::DeviceFilter f;
  const mori::Status s = rdma::parse_device_filter(text, &f);
  REQUIRE_FALSE(s.ok());
  return s.message();
}

std::string select_error(const std::vector<std::string>& available, const char* text) {
  std::vector<rdma::SelectedDevice> out;
  const mori::Status s = rdma::select_devices(available, parse_ok(text), &out);
  REQUIRE_FALSE(s.ok());
  return s.message();
}

// A bootstrap of one PE: every collective copies its own block.
class SoloBootstrap : public mori::bootstrap::Bootstrap {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  mori::Status allgather(const void* send, void* recv, size_t bytes) override {
    ++calls;
    std::memcpy(recv, send, bytes);
    return {};
  }
  mori::Status alltoall(const void* send, void* recv, size_t bytes) override {
    return allgather(send, recv, bytes);
  }
  mori::Status barrier() override { return {}; }
  mori::Status broadcast(void*, size_t, int) override { return {}; }
  mori::Status split(int color, int key, std::chrono::milliseconds timeout,
                     std::unique_ptr<mori::bootstrap::Bootstrap>* out) override {
    return mori::bootstrap::split_over_tcp(*this, color, key, timeout, out);
  }
  int calls = 0;
};

rdma::VerbsConfig solo_config(void* heap, size_t bytes) {
  rdma::VerbsConfig c;
  c.nic = "mlx5";
  c.num_qp_per_pe = 2;
  c.needs_rdma = {false};
  c.heap_base = heap;
  c.heap_bytes = bytes;
  return c;
}

}  // namespace

TEST_CASE("rdma devices: empty text keeps every device in order, on port 1") {
  const rdma::DeviceFilter f = parse_ok("");
  CHECK(f.mode == Mode::kAll);
  CHECK(f.entries.empty());
  std::vector<rdma::SelectedDevice> out;
  REQUIRE(rdma::select_devices({"mlx5_1", "mlx5_0"}, f, &out).ok());
  CHECK(out == std::vector<rdma::SelectedDevice>{{"mlx5_1", 1}, {"mlx5_0", 1}});
}

TEST_CASE("rdma devices: an include list with ports") {
  const rdma::DeviceFilter f = parse_ok("mlx5_0,mlx5_1:2,mlx5_3:255");
  CHECK(f.mode == Mode::kInclude);
  REQUIRE(f.entries.size() == 3);
  CHECK(f.entries[0].name == "mlx5_0");
  CHECK(f.entries[0].port == 1);
  CHECK(f.entries[1].name == "mlx5_1");
  CHECK(f.entries[1].port == 2);
  CHECK(f.entries[2].port == 255);
}

TEST_CASE("rdma devices: an include list keeps the order of the device list, not its own") {
  std::vector<rdma::SelectedDevice> out;
  REQUIRE(
      rdma::select_devices({"mlx5_0", "mlx5_1", "mlx5_2"}, parse_ok("mlx5_2:2,mlx5_0"), &out).ok());
  CHECK(out == std::vector<rdma::SelectedDevice>{{"mlx5_0", 1}, {"mlx5_2", 2}});
}

TEST_CASE("rdma devices: the caret excludes every device of the list") {
  const rdma::DeviceFilter f = parse_ok("^mlx5_2,mlx5_3");
  CHECK(f.mode == Mode::kExclude);
  REQUIRE(f.entries.size() == 2);
  std::vector<rdma::SelectedDevice> out;
  REQUIRE(rdma::select_devices({"mlx5_0", "mlx5_2", "mlx5_3", "mlx5_1"}, f, &out).ok());
  CHECK(out == std::vector<rdma::SelectedDevice>{{"mlx5_0", 1}, {"mlx5_1", 1}});
  // Excluding a device that is not there is harmless.
  REQUIRE(rdma::select_devices({"mlx5_0"}, parse_ok("^mlx5_9"), &out).ok());
  CHECK(out == std::vector<rdma::SelectedDevice>{{"mlx5_0", 1}});
}

TEST_CASE("rdma devices: malformed text is refused, quoting the item") {
  CHECK(parse_error("mlx5_0,,mlx5_1") == "MORI_RDMA_DEVICES: empty item in \"mlx5_0,,mlx5_1\"");
  CHECK(parse_error("mlx5_0,") == "MORI_RDMA_DEVICES: empty item in \"mlx5_0,\"");
  CHECK(parse_error(",mlx5_0") == "MORI_RDMA_DEVICES: empty item in \",mlx5_0\"");
  CHECK(parse_error("^,mlx5_0") == "MORI_RDMA_DEVICES: empty item in \"^,mlx5_0\"");
  CHECK(parse_error("^") ==
        "MORI_RDMA_DEVICES: \"^\" excludes nothing: name the devices after the caret (^mlx5_2)");
  CHECK(parse_error("mlx5_0, mlx5_1") == "MORI_RDMA_DEVICES: \" mlx5_1\" contains whitespace");
  CHECK(parse_error(" ") == "MORI_RDMA_DEVICES: \" \" contains whitespace");
  CHECK(parse_error("mlx5_0\t") == "MORI_RDMA_DEVICES: \"mlx5_0\t\" contains whitespace");
  CHECK(parse_error("mlx5_0,^mlx5_1") ==
        "MORI_RDMA_DEVICES: \"^mlx5_1\" has a caret inside the list: a caret may only start the "
        "list, where it excludes every device named");
  CHECK(parse_error("^^mlx5_1") ==
        "MORI_RDMA_DEVICES: \"^mlx5_1\" has a caret inside the list: a caret may only start the "
        "list, where it excludes every device named");
  CHECK(parse_error(":1") == "MORI_RDMA_DEVICES: \":1\" has no device name");
  for (const char* port :
       {"mlx5_0:", "mlx5_0:0", "mlx5_0:256", "mlx5_0:x", "mlx5_0:-1", "mlx5_0:1:2", "mlx5_0:0001"})
    CHECK(parse_error(port) == std::string("MORI_RDMA_DEVICES: \"") + port +
                                   "\" has a bad port: use a number from 1 to 255");
  CHECK(parse_error("^mlx5_2:1") ==
        "MORI_RDMA_DEVICES: \"mlx5_2:1\" has a port: an exclude list names devices without ports");
  CHECK(parse_error("mlx5_0,mlx5_0:2") == "MORI_RDMA_DEVICES: \"mlx5_0\" is named twice");
}

TEST_CASE("rdma devices: an include list naming a missing device names it and what exists") {
  CHECK(select_error({"mlx5_0", "mlx5_1"}, "mlx5_0,mlx5_9") ==
        "MORI_RDMA_DEVICES names mlx5_9, which does not exist (devices: mlx5_0, mlx5_1)");
  CHECK(select_error({}, "mlx5_0") ==
        "MORI_RDMA_DEVICES names mlx5_0, which does not exist (no RDMA devices)");
}

TEST_CASE("rdma devices: a filter that excludes every device is an error naming the filter") {
  CHECK(select_error({"mlx5_0", "mlx5_1"}, "^mlx5_1,mlx5_0") ==
        "MORI_RDMA_DEVICES=\"^mlx5_1,mlx5_0\" excludes every device (devices: mlx5_0, mlx5_1)");
  // With no device at all, an exclude list (or none) selects nothing, without error.
  std::vector<rdma::SelectedDevice> out{{"stale", 1}};
  REQUIRE(rdma::select_devices({}, parse_ok("^mlx5_0"), &out).ok());
  CHECK(out.empty());
}

TEST_CASE("rdma devices: open on a machine without devices reports no_devices, collectively") {
  std::vector<uint64_t> heap(64);
  for (const char* nic : {"mlx5", "", "bnxt", "ionic"}) {
    CAPTURE(nic);
    SoloBootstrap boot;
    rdma::VerbsConfig config = solo_config(heap.data(), heap.size() * sizeof(uint64_t));
    config.nic = nic;
    config.device_filter_text = "^mlx5_3";
    std::unique_ptr<rdma::VerbsNetwork> net;
    bool no_devices = false;
    const mori::Status s = rdma::VerbsNetwork::open(config, boot, &net, &no_devices);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(no_devices);
    CHECK(net == nullptr);
    CHECK(boot.calls == 1);  // the device agreement only
  }
}

TEST_CASE("rdma devices: open without devices still refuses a bad filter and an include list") {
  std::vector<uint64_t> heap(64);
  SoloBootstrap boot;
  rdma::VerbsConfig config = solo_config(heap.data(), heap.size() * sizeof(uint64_t));
  std::unique_ptr<rdma::VerbsNetwork> net;
  bool no_devices = true;
  config.device_filter_text = "mlx5_0,";
  mori::Status s = rdma::VerbsNetwork::open(config, boot, &net, &no_devices);
  CHECK(s.message() == "MORI_RDMA_DEVICES: empty item in \"mlx5_0,\"");
  CHECK_FALSE(no_devices);
  config.device_filter_text = "mlx5_0:1";
  s = rdma::VerbsNetwork::open(config, boot, &net, &no_devices);
  CHECK(s.message() == "MORI_RDMA_DEVICES names mlx5_0, which does not exist (no RDMA devices)");
  config.device_filter_text = "";
  config.nic = "cxi";
  s = rdma::VerbsNetwork::open(config, boot, &net, &no_devices);
  CHECK(s.message() == "MORI_DEVICE_NIC=cxi is not a NIC mori knows (mlx5, bnxt, ionic)");
  CHECK(net == nullptr);
  CHECK(boot.calls == 3);  // every failure still took part in the agreement
}

TEST_CASE("rdma: a QP's read/atomic depths pair the initiator with max_qp_init_rd_atom") {
  // ConnectX-like limits where the two differ: the initiator (RTS max_rd_atomic) takes
  // max_qp_init_rd_atom, the responder (RTR max_dest_rd_atomic) max_qp_rd_atom.
  const mori::rdma::RdAtomicDepths d = mori::rdma::rd_atomic_depths(/*max_qp_rd_atom=*/16,
                                                                    /*max_qp_init_rd_atom=*/8);
  CHECK(d.initiator == 8);
  CHECK(d.responder == 16);
  const mori::rdma::RdAtomicDepths low = mori::rdma::rd_atomic_depths(0, 0);
  CHECK(low.initiator == 1);  // at least one outstanding read or atomic
  CHECK(low.responder == 1);
  const mori::rdma::RdAtomicDepths high = mori::rdma::rd_atomic_depths(255, 128);
  CHECK(high.initiator == mori::rdma::kMaxRdAtomic);
  CHECK(high.responder == mori::rdma::kMaxRdAtomic);
}
