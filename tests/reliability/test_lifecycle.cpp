// The host API out of order, with PEs joined by a unique ID: finalize twice, free and the other
// calls after finalize, and init again after finalize (a new job from a new ID).
#include "faults.hpp"

namespace shmem = mori::shmem;
using namespace mori::test;

TEST_CASE("lifecycle: double finalize, free after finalize, init after finalize") {
  CaseEnv env({{"MORI_SHMEM_HEAP_SIZE", "8M"}, {"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "10"}});
  const shmem::UniqueId first = new_id(), second = new_id();
  const std::string not_initialised = ": not initialised (call init or init_attr first)";
  const ChildRun run = run_ranks(
      2,
      [&](int rank) -> std::string {
        FAULT_CHECK(init_uid(first, rank, 2) == 0);
        FAULT_CHECK(init_uid(first, rank, 2) != 0);
        FAULT_EQ(shmem::last_error(), "init_attr: already initialised (call finalize first)");
        void* kept = shmem::malloc(4096);
        FAULT_CHECK(kept != nullptr);
        FAULT_CHECK(shmem::finalize() == 0);

        FAULT_CHECK(shmem::finalize() != 0);
        FAULT_EQ(shmem::last_error(), "finalize" + not_initialised);
        FAULT_CHECK(shmem::free(kept) != 0);  // the heap is gone: nothing is touched
        FAULT_EQ(shmem::last_error(), "free" + not_initialised);
        FAULT_CHECK(shmem::free(nullptr) != 0);
        FAULT_EQ(shmem::last_error(), "free" + not_initialised);
        FAULT_CHECK(shmem::malloc(64) == nullptr);
        FAULT_EQ(shmem::last_error(), "malloc" + not_initialised);
        FAULT_CHECK(shmem::barrier_all() != 0);
        FAULT_EQ(shmem::last_error(), "barrier_all" + not_initialised);
        FAULT_CHECK(shmem::module_init(nullptr) != 0);
        FAULT_EQ(shmem::last_error(), "module_init" + not_initialised);
        FAULT_CHECK(shmem::my_pe() == -1);

        // A new job: init works again and the heap starts empty.
        FAULT_CHECK(init_uid(second, 1 - rank, 2) == 0);
        FAULT_CHECK(shmem::my_pe() == 1 - rank);
        void* again = shmem::malloc(4096);
        FAULT_CHECK(again != nullptr);
        FAULT_CHECK(shmem::barrier_all() == 0);
        FAULT_CHECK(shmem::free(again) == 0);
        FAULT_CHECK(shmem::finalize() == 0);
        return "";
      },
      std::chrono::seconds(30));
  expect_children(run, {0, 1});
}
