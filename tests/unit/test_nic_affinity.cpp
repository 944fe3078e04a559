// rdma nic affinity: choosing the RDMA device nearest a GPU in the PCI tree
// (src/rdma/nic_affinity.hpp), on fake sysfs trees of real directories and relative symlinks laid
// out as the kernel lays out /sys/devices, /sys/bus/pci/devices and /sys/class/infiniband; the
// fallbacks to local_rank % count with their exact reasons; PCI address normalization.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "rdma/nic_affinity.hpp"

namespace fs = std::filesystem;
namespace rdma = mori::rdma;

namespace {

// Two PCIe switches, each with two GPUs and a NIC, and a third with one GPU and two NICs. The NIC
// of the second switch (bus c5) is mlx5_0 and that of the first (bus 05) is mlx5_1: their names
// run against PCIe order, so local_rank % count would put GPU 0 on the far NIC.
constexpr const char* kSwitch1 = "pci0000:00/0000:00:01.1/0000:01:00.0";
constexpr const char* kSwitch2 = "pci0000:b0/0000:b0:01.1/0000:b1:00.0";
constexpr const char* kSwitch3 = "pci0000:40/0000:40:01.1/0000:41:00.0";

class FakeSysfs {
 public:
  FakeSysfs() {
    char path[] = "/tmp/mori_sysfs_XXXXXX";
    REQUIRE(mkdtemp(path) != nullptr);
    root = path;
    fs::create_directories(root + "/bus/pci/devices");
    fs::create_directories(root + "/class/infiniband");
    add_gpu(kSwitch1, "0000:02:00.0/0000:03:00.0");
    add_gpu(kSwitch1, "0000:02:01.0/0000:04:00.0");
    add_nic("mlx5_1", kSwitch1, "0000:02:02.0/0000:05:00.0");
    add_gpu(kSwitch2, "0000:b2:00.0/0000:c1:00.0");
    add_gpu(kSwitch2, "0000:b2:01.0/0000:c2:00.0");
    add_nic("mlx5_0", kSwitch2, "0000:b2:02.0/0000:c5:00.0");
    add_gpu(kSwitch3, "0000:42:00.0/0000:43:00.0");
    add_nic("mlx5_2", kSwitch3, "0000:42:02.0/0000:45:00.0");
    add_nic("mlx5_3", kSwitch3, "0000:42:03.0/0000:46:00.0");
  }
  ~FakeSysfs() { fs::remove_all(root); }

  // /sys/bus/pci/devices/<addr> -> ../../../devices/<path>
  void add_gpu(const std::string& bridge, const std::string& below) {
    const std::string path = bridge + "/" + below;
    fs::create_directories(root + "/devices/" + path);
    fs::create_symlink("../../../devices/" + path, root + "/bus/pci/devices/" + last(path));
  }
  // /sys/class/infiniband/<name> -> ../../devices/<path>/infiniband/<name>, whose `device` is
  // ../../../<addr>, as the kernel links them.
  void add_nic(const std::string& name, const std::string& bridge, const std::string& below) {
    const std::string path = bridge + "/" + below;
    const std::string ib = root + "/devices/" + path + "/infiniband/" + name;
    fs::create_directories(ib);
    fs::create_symlink("../../../" + last(path), ib + "/device");
    fs::create_symlink("../../devices/" + path + "/infiniband/" + name,
                       root + "/class/infiniband/" + name);
  }

  rdma::NicChoice choose(const std::string& gpu, const std::vector<std::string>& names,
                         int local_rank) const {
    return rdma::choose_nic(root, gpu, names, local_rank);
  }

  std::string root;

 private:
  static std::string last(const std::string& path) { return path.substr(path.rfind('/') + 1); }
};

const std::vector<std::string> kTwo = {"mlx5_0", "mlx5_1"};

void check_fallback(const rdma::NicChoice& c, size_t index, const std::string& reason) {
  CHECK_FALSE(c.by_topology);
  CHECK(c.index == index);
  CHECK(c.reason == reason);
}

}  // namespace

TEST_CASE("rdma nic affinity: each GPU gets the NIC under its own switch") {
  FakeSysfs sys;
  const char* gpus[] = {"0000:03:00.0", "0000:04:00.0", "0000:c1:00.0", "0000:c2:00.0"};
  const char* expected[] = {"mlx5_1", "mlx5_1", "mlx5_0", "mlx5_0"};
  for (int local_rank = 0; local_rank < 4; ++local_rank) {
    CAPTURE(local_rank);
    const rdma::NicChoice c = sys.choose(gpus[local_rank], kTwo, local_rank);
    CHECK(c.by_topology);
    CHECK(kTwo[c.index] == expected[local_rank]);
    CHECK(c.reason == std::string(expected[local_rank]) + " is nearest to GPU " + gpus[local_rank] +
                          " (distance 4, 1 of 2 devices that near)");
  }
}

TEST_CASE("rdma nic affinity: equally near NICs are spread by local_rank") {
  FakeSysfs sys;
  const std::vector<std::string> all = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"};
  const char* expected[] = {"mlx5_2", "mlx5_3", "mlx5_2", "mlx5_3"};
  for (int local_rank = 0; local_rank < 4; ++local_rank) {
    const rdma::NicChoice c = sys.choose("0000:43:00.0", all, local_rank);
    CHECK(c.by_topology);
    CHECK(all[c.index] == expected[local_rank]);
  }
  // The nearest need not be adjacent in the list: index 0 and 2 here.
  const std::vector<std::string> mixed = {"mlx5_3", "mlx5_0", "mlx5_2"};
  rdma::NicChoice c = sys.choose("0000:43:00.0", mixed, 1);
  CHECK(c.index == 2);
  CHECK(c.reason == "mlx5_2 is nearest to GPU 0000:43:00.0 (distance 4, 2 of 3 devices that near)");
  c = sys.choose("0000:43:00.0", mixed, 2);
  CHECK(c.index == 0);
  // A GPU under another switch is as far from both (through the root complexes).
  c = sys.choose("0000:03:00.0", {"mlx5_2", "mlx5_0", "mlx5_3"}, 1);
  CHECK(c.index == 1);
  CHECK(c.reason ==
        "mlx5_0 is nearest to GPU 0000:03:00.0 (distance 10, 3 of 3 devices that near)");
}

TEST_CASE("rdma nic affinity: without the GPU's address, local_rank % count and why") {
  FakeSysfs sys;
  check_fallback(sys.choose("", kTwo, 3), 1,
                 "the GPU's PCI address is unknown; using local_rank % 2");
  check_fallback(
      sys.choose("gpu0", kTwo, 2), 0,
      "the GPU's PCI address \"gpu0\" is not [domain:]bus:device.function; using local_rank % 2");
  check_fallback(sys.choose("0000:99:00.0", kTwo, 1), 1,
                 "cannot resolve " + sys.root +
                     "/bus/pci/devices/0000:99:00.0 (No such file or directory); using "
                     "local_rank % 2");
}

TEST_CASE("rdma nic affinity: a NIC whose link dangles falls back, naming the path") {
  FakeSysfs sys;
  fs::create_symlink("../../devices/pci0000:00/gone/infiniband/mlx5_9",
                     sys.root + "/class/infiniband/mlx5_9");
  check_fallback(sys.choose("0000:03:00.0", {"mlx5_0", "mlx5_9", "mlx5_1"}, 4), 1,
                 "cannot resolve " + sys.root +
                     "/class/infiniband/mlx5_9/device (No such file or directory); using "
                     "local_rank % 3");
}

TEST_CASE("rdma nic affinity: one device is chosen without reading sysfs") {
  check_fallback(rdma::choose_nic("/nonexistent", "", {"mlx5_4"}, 5), 0,
                 "mlx5_4 is the only device selected");
}

TEST_CASE("rdma nic affinity: PCI addresses are normalized as sysfs spells them") {
  CHECK(rdma::normalize_pci_address("c1:00.0") == "0000:c1:00.0");
  CHECK(rdma::normalize_pci_address("0000:C1:00.0") == "0000:c1:00.0");
  CHECK(rdma::normalize_pci_address("00000000:c1:1f.7") == "0000:c1:1f.7");
  CHECK(rdma::normalize_pci_address("1:2:3.4") == "0001:02:03.4");
  CHECK(rdma::normalize_pci_address("10000:c1:00.0") == "10000:c1:00.0");
  for (const char* bad : {"", "c1:00", "c1.0", "zz:00.0", "0000:c1:00.8", "0000:c1:20.0",
                          "0000:c1:00.0 ", "0000:0c1:00.0", ":c1:00.0", "0000:c1:00.", "a:b:c:d.0"})
    CHECK_MESSAGE(rdma::normalize_pci_address(bad).empty(), bad);
  // The GPU's address as HIP may give it, uppercase and without a domain, still finds its NIC.
  FakeSysfs sys;
  const rdma::NicChoice c = sys.choose("C1:00.0", kTwo, 0);
  CHECK(c.by_topology);
  CHECK(kTwo[c.index] == "mlx5_0");
  CHECK(c.reason == "mlx5_0 is nearest to GPU 0000:c1:00.0 (distance 4, 1 of 2 devices that near)");
}
