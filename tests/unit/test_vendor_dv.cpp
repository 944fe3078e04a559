// vendor_dv: VendorDv::load over the stand-in direct-verbs libraries of tests/unit/fake_dv (one
// with every function, one without bnxt_re_dv_create_qp and ionic_dv_get_qp) and over paths that
// do not exist, checking each error's exact text.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "rdma/vendor_dv.hpp"

using mori::rdma::VendorDv;

namespace {

constexpr const char* kComplete = MORI_FAKE_DV_COMPLETE;
constexpr const char* kIncomplete = MORI_FAKE_DV_INCOMPLETE;
constexpr const char* kMissing = "/nonexistent/mori-test/libbnxt_re.so";

// What dlopen says about `path`, as the loader quotes it.
std::string dlopen_error(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle == nullptr);
  const char* e = dlerror();
  REQUIRE(e != nullptr);
  return e;
}

template <typename F>
void* address(F* fn) {
  return reinterpret_cast<void*>(fn);
}

// Each of `functions` is the function of the same name in `path`, in the order of the names.
void check_functions(const std::string& path, const std::vector<const char*>& names,
                     const std::vector<void*>& functions) {
  REQUIRE(names.size() == functions.size());
  void* same = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(same != nullptr);
  for (size_t i = 0; i < names.size(); ++i) {
    CAPTURE(names[i]);
    CHECK(functions[i] != nullptr);
    CHECK(functions[i] == dlsym(same, names[i]));
  }
  dlclose(same);
}

std::string load_error(const std::string& nic, const std::vector<std::string>& candidates) {
  std::unique_ptr<VendorDv> dv;
  const mori::Status st = VendorDv::load(nic, candidates, &dv);
  CHECK_FALSE(st.ok());
  CHECK(dv == nullptr);
  return st.message();
}

}  // namespace

TEST_CASE("vendor_dv: a complete BNXT library loads by path, every function resolved") {
  std::unique_ptr<VendorDv> dv;
  REQUIRE(VendorDv::load("bnxt", {kComplete}, &dv).ok());
  REQUIRE(dv);
  CHECK(dv->path() == kComplete);
  const mori::rdma::BnxtDv& b = dv->bnxt();
  check_functions(
      dv->path(),
      {"bnxt_re_dv_umem_reg", "bnxt_re_dv_umem_dereg", "bnxt_re_dv_create_cq",
       "bnxt_re_dv_destroy_cq", "bnxt_re_dv_create_qp", "bnxt_re_dv_destroy_qp",
       "bnxt_re_dv_modify_qp", "bnxt_re_dv_init_obj", "bnxt_re_dv_get_default_db_region"},
      {address(b.umem_reg), address(b.umem_dereg), address(b.create_cq), address(b.destroy_cq),
       address(b.create_qp), address(b.destroy_qp), address(b.modify_qp), address(b.init_obj),
       address(b.get_default_db_region)});
  CHECK(address(dv->ionic().get_ctx) == nullptr);
}

TEST_CASE("vendor_dv: a complete Ionic library loads by path, every function resolved") {
  std::unique_ptr<VendorDv> dv;
  REQUIRE(VendorDv::load("ionic", {kComplete}, &dv).ok());
  REQUIRE(dv);
  CHECK(dv->path() == kComplete);
  const mori::rdma::IonicDv& o = dv->ionic();
  check_functions(
      dv->path(),
      {"ionic_dv_get_ctx", "ionic_dv_get_qp", "ionic_dv_get_cq", "ionic_dv_qp_get_udma_idx",
       "ionic_dv_pd_set_sqcmb", "ionic_dv_pd_set_rqcmb", "ionic_dv_pd_set_udma_mask"},
      {address(o.get_ctx), address(o.get_qp), address(o.get_cq), address(o.qp_get_udma_idx),
       address(o.pd_set_sqcmb), address(o.pd_set_rqcmb), address(o.pd_set_udma_mask)});
  CHECK(address(dv->bnxt().create_qp) == nullptr);
}

TEST_CASE("vendor_dv: a library without a function fails, naming the file and the function") {
  CHECK(load_error("bnxt", {kIncomplete}) ==
        std::string("MORI_DEVICE_NIC=bnxt: ") + kIncomplete + " has no bnxt_re_dv_create_qp");
  CHECK(load_error("ionic", {kIncomplete}) ==
        std::string("MORI_DEVICE_NIC=ionic: ") + kIncomplete + " has no ionic_dv_get_qp");
}

TEST_CASE(
    "vendor_dv: a library found by name reports the file dlopen found, and every missing name") {
  // libc is loaded already and has none of the functions: its path comes from dlinfo.
  const std::string message = load_error("ionic", {"libc.so.6"});
  CHECK(message.rfind("MORI_DEVICE_NIC=ionic: /", 0) == 0);
  CHECK(message.find("/libc.so.6 has no ionic_dv_get_ctx, ionic_dv_get_qp, ionic_dv_get_cq, "
                     "ionic_dv_qp_get_udma_idx, ionic_dv_pd_set_sqcmb, ionic_dv_pd_set_rqcmb, "
                     "ionic_dv_pd_set_udma_mask") != std::string::npos);
}

TEST_CASE("vendor_dv: no library fails, naming the first and quoting dlerror") {
  CHECK(load_error("bnxt", {kMissing}) ==
        std::string("MORI_DEVICE_NIC=bnxt: ") + kMissing +
            " (Broadcom's bnxt_re direct verbs) not found: " + dlopen_error(kMissing) +
            "; install the NIC vendor's rdma-core or libbnxt_re");
  const char* other = "/nonexistent/mori-test/libionic.so.1";
  CHECK(load_error("ionic", {"/nonexistent/mori-test/libionic.so", other}) ==
        "MORI_DEVICE_NIC=ionic: /nonexistent/mori-test/libionic.so (AMD's ionic direct verbs) "
        "not found: " +
            dlopen_error("/nonexistent/mori-test/libionic.so") + "; also tried " + other +
            "; install the NIC vendor's rdma-core or libionic");
}

TEST_CASE("vendor_dv: candidates are tried in order, the first that opens is used") {
  std::unique_ptr<VendorDv> dv;
  REQUIRE(VendorDv::load("bnxt", {kMissing, kComplete, kIncomplete}, &dv).ok());
  CHECK(dv->path() == kComplete);
  // The first that opens is used even when it lacks a function: no silent fallback.
  CHECK(load_error("bnxt", {kIncomplete, kComplete}) ==
        std::string("MORI_DEVICE_NIC=bnxt: ") + kIncomplete + " has no bnxt_re_dv_create_qp");
}

TEST_CASE("vendor_dv: the default library names, and an unknown family") {
  CHECK(
      mori::rdma::default_dv_libraries("bnxt") ==
      std::vector<std::string>{"libbnxt_re.so", "libbnxt_re-rdmav59.so", "libbnxt_re-rdmav34.so"});
  CHECK(mori::rdma::default_dv_libraries("ionic") ==
        std::vector<std::string>{"libionic.so", "libionic.so.1"});
  CHECK(mori::rdma::default_dv_libraries("mlx5").empty());
  CHECK(load_error("mlx5", {kComplete}) ==
        "MORI_DEVICE_NIC=mlx5: no direct-verbs library is known for it");
}
