// init_attr when the job cannot form: a peer that never arrives, rank 0 absent, a unique ID that is
// corrupted or of another version, and MORI_RDMA_DEVICES naming a device that does not exist. Each
// fails on every PE within the bootstrap deadline with the exact text, and leaves nothing
// initialised.
#include <cstring>

#include "bootstrap/bytes.hpp"
#include "bootstrap/unique_id.hpp"
#include "faults.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;

TEST_CASE("init faults: a bootstrap peer that never arrives is named by every PE at the deadline") {
  CaseEnv env({{"MORI_SHMEM_HEAP_SIZE", "8M"}, {"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "1"}});
  const shmem::UniqueId job = new_id();
  const ChildRun run = run_children(
      {0, 1},
      [&](int rank) -> std::string {
        FAULT_CHECK(init_uid(job, rank, 3) != 0);
        FAULT_EQ(shmem::last_error(),
                 "init_attr: bootstrap timed out after 1000 ms waiting for rank(s) 2 to join");
        FAULT_CHECK(shmem::my_pe() == -1);
        return "";
      },
      std::chrono::seconds(20));
  expect_children(run, {0, 1});
  CHECK(run.elapsed >= std::chrono::milliseconds(1000));
  CHECK(run.elapsed < std::chrono::milliseconds(3000));
}

TEST_CASE("init faults: rank 0 alive but never calling init: the others time out waiting for it") {
  CaseEnv env({{"MORI_SHMEM_HEAP_SIZE", "8M"}, {"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "1"}});
  // This process made the ID, so its listener accepts connections; rank 0 never joins.
  const shmem::UniqueId job = new_id();
  const ChildRun run = run_children(
      {1, 2},
      [&](int rank) -> std::string {
        FAULT_CHECK(init_uid(job, rank, 3) != 0);
        FAULT_EQ(shmem::last_error(),
                 "init_attr: bootstrap: timed out after 1000 ms (+250 ms grace) in join waiting "
                 "for rank 0");
        return "";
      },
      std::chrono::seconds(20));
  expect_children(run, {1, 2});
  CHECK(run.elapsed < std::chrono::milliseconds(3000));
}

TEST_CASE("init faults: a corrupted, foreign or other-version unique ID is refused at once") {
  CaseEnv env({{"MORI_SHMEM_HEAP_SIZE", "8M"}, {"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "30"}});
  shmem::UniqueId corrupted = new_id();
  corrupted.bytes[mori::bootstrap::kIdNonceOffset + 3] ^= 0x10;  // one bit after the header
  shmem::UniqueId other_version = new_id();
  mori::bootstrap::store_le<uint16_t>(other_version.bytes + mori::bootstrap::kIdVersionOffset, 2);
  mori::bootstrap::seal_unique_id(&other_version);  // a valid checksum: the version is the fault
  shmem::UniqueId foreign;
  std::memset(foreign.bytes, 0, sizeof foreign.bytes);
  const std::pair<shmem::UniqueId, std::string> cases[] = {
      {corrupted, "init_attr: corrupted unique ID (checksum mismatch)"},
      {other_version, "init_attr: unique ID version 2, this library speaks 1"},
      {foreign, "init_attr: not a mori unique ID"},
  };
  for (const auto& [id, text] : cases) {
    for (int rank : {0, 1}) {  // rank 0 and the others refuse it before any network traffic
      CAPTURE(rank);
      const Clock::time_point start = Clock::now();
      CHECK(init_uid(id, rank, 2) != 0);
      CHECK(std::string(shmem::last_error()) == text);
      CHECK(ms_since(start) < 1000);
      CHECK(shmem::my_pe() == -1);
    }
  }
}

TEST_CASE("init faults: MORI_RDMA_DEVICES naming a device that does not exist fails init") {
  // No RDMA devices on this machine, MORI_DEVICE_NIC unset: the ibverbs path. With P2P off every
  // other PE needs RDMA, so the filter is applied and its include list cannot be met.
  CaseEnv env({{"MORI_SHMEM_HEAP_SIZE", "8M"},
               {"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "5"},
               {"MORI_DEVICE_NIC", nullptr},
               {"MORI_DISABLE_P2P", "1"},
               {"MORI_RDMA_DEVICES", "mlx5_9"}});
  const std::pair<const char*, std::string> cases[] = {
      {"mlx5_9",
       "init_attr: MORI_RDMA_DEVICES names mlx5_9, which does not exist (no RDMA devices)"},
      {"mlx5_0:x",
       "init_attr: MORI_RDMA_DEVICES: \"mlx5_0:x\" has a bad port: use a number from 1 to 255"},
  };
  for (const auto& [filter, text] : cases) {
    CAPTURE(filter);
    CaseEnv devices({{"MORI_RDMA_DEVICES", filter}});
    const shmem::UniqueId job = new_id();
    const ChildRun run = run_ranks(
        2,
        [&](int rank) -> std::string {
          FAULT_CHECK(init_uid(job, rank, 2) != 0);
          FAULT_EQ(shmem::last_error(), text);
          FAULT_CHECK(shmem::my_pe() == -1);
          return "";
        },
        std::chrono::seconds(20));
    expect_children(run, {0, 1});
    CHECK(run.elapsed < std::chrono::seconds(3));
  }

  // When no PE needs RDMA (every PE reached over P2P), no device is opened and the variable is not
  // consulted: init succeeds.
  CaseEnv p2p({{"MORI_DISABLE_P2P", nullptr}});
  const shmem::UniqueId job = new_id();
  const ChildRun run = run_ranks(
      2,
      [&](int rank) -> std::string {
        FAULT_CHECK(init_uid(job, rank, 2) == 0);
        FAULT_CHECK(shmem::finalize() == 0);
        return "";
      },
      std::chrono::seconds(20));
  expect_children(run, {0, 1});
}
