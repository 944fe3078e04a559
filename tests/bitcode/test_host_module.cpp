// The proof-of-concept kernels of examples/shmem/mlir_shmem_poc, built for the host backend along
// both paths (MLIR and LLVM IR) and linked with the host-flavour bitcode, run as a GPU code object
// would be: the shared object is the module (dlopen), module_init fills its device state, and
// mori::host::launch runs its kernels on every PE. Also what the module flow promises:
//   - the module's code reads the module's own device state, so it is zero until module_init;
//   - the module's code sees the launch that runs it (the launcher's thread-local context);
//   - module_init refuses a module built for another device-state ABI version, and what is not a
//     module (a null handle, a library without the device state).
#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "device_harness.hpp"

namespace shmem = mori::shmem;
namespace state = mori::state;
using mori::test::launch;
using mori::test::Session;

namespace {

using Kernel = void(int32_t*);

// A dlopen'ed module. RTLD_LOCAL: two modules' own definitions never meet. Declare it before the
// Session, because finalize republishes the (cleared) state to every module module_init saw.
class Module {
 public:
  explicit Module(const std::string& path) : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    REQUIRE_MESSAGE(handle_ != nullptr, dlerror());
  }
  ~Module() { dlclose(handle_); }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  void* handle() const { return handle_; }
  template <typename F>
  F* symbol(const char* name) const {
    void* s = dlsym(handle_, name);
    REQUIRE_MESSAGE(s != nullptr, "the module has no " << name);
    return reinterpret_cast<F*>(s);
  }

 private:
  void* handle_;
};

std::string poc_module(const char* path) {
  return std::string(MORI_POC_DIR) + "/shmem_kernels_" + path + "_host.so";
}

void init_module(const Module& m) {
  REQUIRE_MESSAGE(shmem::module_init(m.handle()) == 0, shmem::last_error());
}

// shmem_basic_kernel writes {my_pe, n_pes}.
void run_basic(const char* path) {
  Module m(poc_module(path));
  Session s;
  init_module(m);
  Kernel* kernel = m.symbol<Kernel>("shmem_basic_kernel");
  int32_t out[2] = {-1, -1};
  launch({1}, {1}, [&] { kernel(out); });
  CHECK(out[0] == s.me);
  CHECK(out[1] == s.n);
}

// shmem_put_kernel p's its rank to the next PE in the ring: each PE gets the previous PE's rank.
void run_put(const char* path) {
  Module m(poc_module(path));
  Session s;
  init_module(m);
  Kernel* kernel = m.symbol<Kernel>("shmem_put_kernel");
  auto* dest = static_cast<int32_t*>(shmem::malloc(sizeof(int32_t)));
  REQUIRE_MESSAGE(dest != nullptr, shmem::last_error());
  *dest = -1;
  REQUIRE(shmem::barrier_all() == 0);
  launch({1}, {1}, [&] { kernel(dest); });
  REQUIRE(shmem::barrier_all() == 0);
  CHECK(*dest == (s.me + s.n - 1) % s.n);
  CHECK(shmem::free(dest) == 0);
}

}  // namespace

TEST_CASE("mlir.basic") { run_basic("mlir"); }
TEST_CASE("mlir.put") { run_put("mlir"); }
TEST_CASE("llvm.basic") { run_basic("llvm"); }
TEST_CASE("llvm.put") { run_put("llvm"); }

// Like a code object, the module has its own globalGpuStates, bound inside it: before module_init
// its kernels see zeros, not the runtime's live state; module_init is what makes them work.
TEST_CASE("module.own_state") {
  Module m(poc_module("llvm"));
  Session s;
  CHECK(m.symbol<void>("_ZN4mori5shmem15globalGpuStatesE") != &shmem::globalGpuStates);
  Kernel* kernel = m.symbol<Kernel>("shmem_basic_kernel");
  int32_t out[2] = {-1, -1};
  launch({1}, {1}, [&] { kernel(out); });
  CHECK(out[0] == 0);
  CHECK(out[1] == 0);
  init_module(m);
  launch({1}, {1}, [&] { kernel(out); });
  CHECK(out[0] == s.me);
  CHECK(out[1] == s.n);
}

// The module's code reads the launcher's thread-local context, not a copy of its own: each lane
// sees its own context, the one the launcher set for it.
TEST_CASE("module.sees_launch") {
  Module probe(MORI_TEST_PROBE_MODULE);
  auto* context = probe.symbol<const void*()>("mori_test_launch_context");
  constexpr int kLanes = 4;
  std::vector<const void*> seen(kLanes), set(kLanes);
  launch({1}, {kLanes}, [&] {
    const int lane = mori::platform::thread_rank();
    seen[lane] = context();
    set[lane] = mori::platform::host::tls_context;
  });
  for (int lane = 0; lane < kLanes; ++lane) {
    CAPTURE(lane);
    CHECK(set[lane] != nullptr);
    CHECK(seen[lane] == set[lane]);
  }
}

TEST_CASE("module.abi_mismatch") {
  Module m(MORI_TEST_V999_MODULE);
  Session s;
  CHECK(shmem::module_init(m.handle()) != 0);
  const std::string expected =
      "the module was built for device-state ABI version 999, this "
      "runtime provides version " +
      std::to_string(state::kGpuStatesAbiVersion);
  CHECK_MESSAGE(std::string(shmem::last_error()).find(expected) != std::string::npos,
                shmem::last_error());
}

// module_init refuses what is not a module, with the messages of docs/troubleshooting.md: no
// handle at all, and a loaded library that has no device state of its own (libc).
TEST_CASE("module.not_a_module") {
  Module libc("libc.so.6");
  Session s;
  CHECK(shmem::module_init(nullptr) != 0);
  CHECK(std::string(shmem::last_error()) == "module_init: module is null");
  CHECK(shmem::module_init(libc.handle()) != 0);
  CHECK(std::string(shmem::last_error()) ==
        "module_init: the module defines no mori::shmem::globalGpuStates "
        "(_ZN4mori5shmem15globalGpuStatesE): link it with libmori_shmem_device.bc");
}

// module_finalize forgets the module: later state changes (buffer_register republishes) no longer
// reach it, so it may be unloaded. Before it, they do.
TEST_CASE("module.finalize") {
  Module m(poc_module("llvm"));
  Session s;
  init_module(m);
  auto* states = m.symbol<state::GpuStates>("_ZN4mori5shmem15globalGpuStatesE");
  std::vector<char> buffer(4096);
  REQUIRE_MESSAGE(shmem::buffer_register(buffer.data(), buffer.size()) == 0, shmem::last_error());
  CHECK(states->n_regions == 1);  // republished to the module
  REQUIRE_MESSAGE(shmem::module_finalize(m.handle()) == 0, shmem::last_error());
  *states = state::GpuStates{};
  REQUIRE_MESSAGE(shmem::buffer_deregister(buffer.data(), buffer.size()) == 0, shmem::last_error());
  REQUIRE_MESSAGE(shmem::buffer_register(buffer.data(), buffer.size()) == 0, shmem::last_error());
  CHECK(states->abi_version == 0);  // nothing reached it
  CHECK(states->n_regions == 0);
  CHECK(shmem::module_finalize(m.handle()) != 0);
  CHECK(std::string(shmem::last_error()) ==
        "module_finalize: the module was not given to module_init (or was finalised)");
  CHECK(shmem::module_finalize(nullptr) != 0);
  CHECK(std::string(shmem::last_error()) == "module_finalize: module is null");
  REQUIRE_MESSAGE(shmem::buffer_deregister(buffer.data(), buffer.size()) == 0, shmem::last_error());
}
