// HIP's current device is per thread (hipSetDevice), and the host API may be called from any
// thread: every entry that touches the device selects the PE's GPU on the calling thread first
// (backend::use_device; reviews/2026-12-01-bringup.md, B8). The host backend records the selection
// per thread as HIP does, so each call below runs on a fresh thread, which has selected nothing,
// and the test reads what the call selected. One PE, in a child process (unique-ID bootstrap).
#include <doctest/doctest.h>
#include <stdlib.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "fork_children.hpp"
#include "mori/shmem.hpp"
#include "runtime/backend.hpp"

namespace shmem = mori::shmem;
namespace backend = mori::backend;

namespace {

// The device `call` left current on a thread of its own, or -2 if the thread had one already.
int device_after(const std::function<void()>& call) {
  int seen = -2;
  std::thread t([&] {
    if (backend::thread_device() != -1) return;
    call();
    seen = backend::thread_device();
  });
  t.join();
  return seen;
}

std::string calls_from_other_threads() {
  shmem::InitAttr attr;
  attr.rank = 0;
  attr.n_ranks = 1;
  if (shmem::get_unique_id(&attr.uid) != 0) return "get_unique_id failed";
  if (shmem::init_attr(shmem::MORI_SHMEM_INIT_WITH_UNIQUEID, &attr) != 0)
    return std::string("init_attr failed: ") + shmem::last_error();
  if (backend::thread_device() != 0) return "init did not select the device on its own thread";
  std::string failures;
  auto expect = [&](const char* api, int want, const std::function<void()>& call) {
    const int got = device_after(call);
    if (got != want)
      failures += std::string(api) + " left device " + std::to_string(got) + ", not " +
                  std::to_string(want) + "; ";
  };
  void* p = nullptr;
  std::vector<char> buffer(4096);
  shmem::Team team = shmem::kTeamInvalid;
  void* shareable = nullptr;
  expect("malloc", 0, [&] { p = shmem::malloc(256); });
  expect("free", -1, [&] { shmem::free(p); });  // nothing on the device: selects nothing
  expect("calloc", 0, [&] { p = shmem::calloc(4, 64); });
  expect("realloc", 0, [&] { p = shmem::realloc(p, 512); });
  expect("buffer_register", 0, [&] { shmem::buffer_register(buffer.data(), buffer.size()); });
  expect("buffer_deregister", 0, [&] { shmem::buffer_deregister(buffer.data(), buffer.size()); });
  expect("ext_alloc_shareable", 0, [&] { shareable = shmem::ext_alloc_shareable(4096); });
  expect("barrier_all", 0, [&] { shmem::barrier_all(); });
  // Refused (a null module, one never given to module_init), but only after selecting the device.
  expect("module_init", 0, [&] { shmem::module_init(nullptr); });
  expect("module_finalize", 0, [&] { shmem::module_finalize(&buffer); });
  expect("team_split_strided", 0,
         [&] { shmem::team_split_strided(shmem::kTeamWorld, 0, 1, 1, nullptr, 0, &team); });
  expect("team_destroy", 0, [&] { shmem::team_destroy(team); });
  expect("my_pe", -1, [&] { shmem::my_pe(); });
  shmem::ext_free_shareable(shareable);
  shmem::free(p);
  expect("finalize", 0, [&] { shmem::finalize(); });
  return failures;
}

}  // namespace

TEST_CASE("every host API entry that touches the device selects it on the calling thread") {
  setenv("MORI_SHMEM_HEAP_SIZE", "16M", 1);
  auto run = mori::test::run_ranks(
      1, [](int) { return calls_from_other_threads(); }, std::chrono::seconds(60));
  REQUIRE(run.children.size() == 1);
  CHECK(run.children[0].text == "");
  CHECK(run.children[0].exit_code == 0);
}
