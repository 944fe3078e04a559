// A PE that dies or stops in the middle of a run. The survivors' device waits time out with the
// wait's diagnostic, an RDMA put into the dead PE's process fails with an error completion,
// finalize returns within the bootstrap deadline with an error naming the PE (or the timeout), and
// the survivors can start a new job afterwards.
#include <signal.h>
#include <unistd.h>

#include <vector>

#include "faults.hpp"
#include "mori/host/launch.hpp"
#include "mori/shmem/device_api.hpp"

namespace state = mori::state;

namespace shmem = mori::shmem;
using namespace mori::test;

namespace {

// A device-error record that a trapped launch left, as the test saw it; cleared for the next
// launch.
uint32_t take_error_code(uint64_t* observed = nullptr) {
  state::DeviceError& record = *shmem::globalGpuStates.error;
  const uint32_t code = record.code;
  if (observed) *observed = record.observed;
  record.code = 0;
  return code;
}

// 3 PEs; `victim` SIGKILLs itself after the first host barrier. The survivors wait on the device
// for a flag the victim would have set, then run a device barrier_all it will never reach, then
// finalize. `finalize_error` is what finalize must report on every survivor.
void run_killed_pe(int victim, const std::string& finalize_error, const char* disable_p2p,
                   const char* nic) {
  CaseEnv env({{"MORI_SHMEM_HEAP_SIZE", "8M"},
               {"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "3"},
               {"MORI_SHMEM_TIMEOUT_MS", "300"},
               {"MORI_DISABLE_P2P", disable_p2p},
               {"MORI_DEVICE_NIC", nic}});
  const shmem::UniqueId job = new_id(), next_job = new_id();
  const ChildRun run = run_ranks(
      3,
      [&](int rank) -> std::string {
        FAULT_CHECK(init_uid(job, rank, 3) == 0);
        auto* flag = static_cast<uint64_t*>(shmem::malloc(sizeof(uint64_t)));
        FAULT_CHECK(flag != nullptr);
        *flag = 0;
        // A registered buffer outside the heap: the software NIC reaches a peer's copy in that
        // peer's process (process_vm_writev), so a put to the dead PE's copy fails.
        std::vector<uint64_t> outside(4, 0);
        const bool rdma = nic != nullptr;
        if (rdma) FAULT_CHECK(shmem::buffer_register(outside.data(), 4 * sizeof(uint64_t)) == 0);
        FAULT_CHECK(shmem::barrier_all() == 0);
        if (rank == victim) kill(getpid(), SIGKILL);

        // The wait for the victim's put times out with what it waited for.
        const mori::Status waited = mori::host::launch(
            {1}, {1}, [&] { shmem::wait_until(flag, shmem::CMP_EQ, uint64_t{1}); });
        FAULT_EQ(waited.message(),
                 lane_failure("wait_until timed out after 300 ms: *" + hex_text(flag) +
                              " is 0, waiting for == 1 (PE " + std::to_string(rank) + ")"));
        FAULT_CHECK(take_error_code() == uint32_t(state::DeviceErrorCode::kTimeout));

        // The device barrier counts arrivals: the victim's never comes. The other survivor's may
        // come after this PE's deadline on a loaded machine, so the count is 1 or 2 of 3.
        const mori::Status barrier =
            mori::host::launch({1}, {1}, [] { shmem::barrier_all<mori::Thread>(); });
        uint64_t arrived = 0;
        FAULT_CHECK(take_error_code(&arrived) == uint32_t(state::DeviceErrorCode::kTimeout));
        FAULT_CHECK(arrived == 1 || arrived == 2);
        FAULT_EQ(barrier.message(),
                 lane_failure("barrier_all timed out after 300 ms: " + std::to_string(arrived) +
                              " of 3 PEs arrived (epoch 1, PE " + std::to_string(rank) + ")"));

        if (rdma) {
          const mori::Status put =
              mori::host::launch({1}, {1}, [&] { shmem::put(outside.data(), flag, 1, victim); });
          // Last, as the failed QP stays in error. The completion carries only a syndrome, as on
          // hardware (WQE 0 was the barrier's AMO, which completed: its CQE and the error's are the
          // two the CQ ring consumed); the NIC's own log line gives
          // the cause ("process_vm_writev to pid N failed: No such process"). qp:
          // softnic_network.cpp's numbering.
          const int qp = 0x100 + victim * shmem::num_qp_per_pe();
          FAULT_EQ(put.message(),
                   lane_failure("RDMA mlx5 error completion: remote access error (status 0x13) on "
                                "WQE 1, qp " +
                                std::to_string(qp) + " posted 2, completed 1, cq consumed 2 (PE " +
                                std::to_string(victim) + ")"));
          FAULT_CHECK(take_error_code() == uint32_t(state::DeviceErrorCode::kCompletionError));
        }

        // finalize does not hang: it fails at its barrier, names the dead PE and tears down anyway.
        const Clock::time_point start = Clock::now();
        FAULT_CHECK(shmem::finalize() != 0);
        FAULT_EQ(shmem::last_error(), finalize_error);
        FAULT_CHECK(ms_since(start) < 3000);
        FAULT_CHECK(shmem::my_pe() == -1);
        // The same text again from the API, now that nothing is initialised.
        FAULT_CHECK(shmem::finalize() != 0);
        FAULT_EQ(shmem::last_error(), "finalize: not initialised (call init or init_attr first)");

        // The survivors start a new job of two PEs.
        const int new_rank = rank < victim ? rank : rank - 1;
        FAULT_CHECK(init_uid(next_job, new_rank, 2) == 0);
        FAULT_CHECK(shmem::n_pes() == 2);
        FAULT_CHECK(shmem::barrier_all() == 0);
        FAULT_CHECK(shmem::finalize() == 0);
        return "";
      },
      std::chrono::seconds(30));
  REQUIRE(run.children.size() == 3);
  CHECK(run.children[victim].signal == SIGKILL);
  for (const auto& child : run.children) {
    if (child.rank == victim) continue;
    CAPTURE(child.rank);
    CHECK(child.text == "");
    CHECK_FALSE(child.timed_out);
  }
  CHECK(run.elapsed < std::chrono::seconds(10));
}

}  // namespace

TEST_CASE("dead PE: a PE killed mid-run: survivors' waits time out and finalize names it") {
  run_killed_pe(2, "finalize: bootstrap: rank 2 closed the connection during barrier", nullptr,
                nullptr);
}

TEST_CASE("dead PE: rank 0 killed mid-run: the survivors' finalize says they lost it") {
  run_killed_pe(0, "finalize: bootstrap: lost connection to rank 0 during barrier", nullptr,
                nullptr);
}

TEST_CASE("dead PE: a PE killed mid-run over the software NIC: finalize does not hang in drain") {
  run_killed_pe(1, "finalize: bootstrap: rank 1 closed the connection during barrier", "1", "mlx5");
}

TEST_CASE("dead PE: a PE that stops answering makes finalize time out, naming it") {
  CaseEnv env({{"MORI_SHMEM_HEAP_SIZE", "8M"}, {"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "1"}});
  const shmem::UniqueId job = new_id();
  const std::string timed_out =
      "finalize: bootstrap: timed out after 1000 ms in barrier waiting for rank 2";
  const ChildRun run = run_ranks(
      3,
      [&](int rank) -> std::string {
        FAULT_CHECK(init_uid(job, rank, 3) == 0);
        FAULT_CHECK(shmem::barrier_all() == 0);
        if (rank == 2) usleep(1500 * 1000);  // alive, but past the others' deadline
        const Clock::time_point start = Clock::now();
        FAULT_CHECK(shmem::finalize() != 0);
        FAULT_EQ(shmem::last_error(), timed_out);
        // Rank 0 gives up at its deadline; rank 1 hears why at once; rank 2 finds the verdict
        // waiting when it comes back.
        if (rank != 2) FAULT_CHECK(ms_since(start) >= 900 && ms_since(start) < 2500);
        FAULT_CHECK(shmem::my_pe() == -1);
        return "";
      },
      std::chrono::seconds(30));
  expect_children(run, {0, 1, 2});
  CHECK(run.elapsed < std::chrono::seconds(6));
}
