// VendorDv::load: dlopen a BNXT or Ionic direct-verbs library and resolve its functions
// (vendor_dv.hpp, which cites the sources of every name). Nothing is linked at build time: the
// library comes from the NIC vendor's rdma-core or user library on the machine that runs.
#include "rdma/vendor_dv.hpp"

#include <dlfcn.h>
#include <link.h>

#include <mutex>

namespace mori::rdma {
namespace {

struct Family {
  const char* what;     // what the library provides, for the error
  const char* package;  // what to install
};

Family family_of(const std::string& nic) {
  if (nic == "bnxt") return {"Broadcom's bnxt_re direct verbs", "libbnxt_re"};
  return {"AMD's ionic direct verbs", "libionic"};
}

// Held around dlopen, dlinfo and dlclose of these libraries. The dynamic loader is thread-safe on
// its own, but its lock is invisible to ThreadSanitizer, which then reports two threads loading
// one library (PEs run as threads, as in the verbs double) as a race on its link_map's name.
std::mutex& loader_mutex() {
  static std::mutex m;
  return m;
}

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

// Resolves `symbol` into *fn, or adds it to the comma-separated *missing.
template <typename F>
void resolve(void* handle, const char* symbol, F* fn, std::string* missing) {
  *fn = reinterpret_cast<F>(dlsym(handle, symbol));
  if (!*fn) *missing += (missing->empty() ? "" : ", ") + std::string(symbol);
}

}  // namespace

std::vector<std::string> default_dv_libraries(const std::string& nic) {
  if (nic == "bnxt") return {"libbnxt_re.so", "libbnxt_re-rdmav59.so", "libbnxt_re-rdmav34.so"};
  if (nic == "ionic") return {"libionic.so", "libionic.so.1"};
  return {};
}

Status VendorDv::load(const std::string& nic, const std::vector<std::string>& candidates,
                      std::unique_ptr<VendorDv>* out) {
  if (nic != "bnxt" && nic != "ionic")
    return Status::error("MORI_DEVICE_NIC=" + nic + ": no direct-verbs library is known for it");
  const std::string prefix = "MORI_DEVICE_NIC=" + nic + ": ";
  const std::vector<std::string> names =
      candidates.empty() ? default_dv_libraries(nic) : candidates;
  const Family family = family_of(nic);

  std::unique_ptr<VendorDv> dv(new VendorDv());
  std::string first_error;
  std::lock_guard<std::mutex> loading(loader_mutex());  // to the end: dlsym reads what dlopen made
  for (const std::string& name : names) {
    dv->handle_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (dv->handle_) {
      dv->path_ = name;
      link_map* map = nullptr;
      if (dlinfo(dv->handle_, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
        dv->path_ = map->l_name;
      break;
    }
    if (first_error.empty()) first_error = dl_error();
  }
  if (!dv->handle_) {
    std::string also;
    for (size_t i = 1; i < names.size(); ++i) also += (i == 1 ? "" : ", ") + names[i];
    return Status::error(prefix + names.front() + " (" + family.what + ") not found: " +
                         first_error + (also.empty() ? "" : "; also tried " + also) +
                         "; install the NIC vendor's rdma-core or " + family.package);
  }

  std::string missing;
  void* handle = dv->handle_;
#define MORI_DV_RESOLVE_BNXT(member, ret, params) \
  resolve(handle, "bnxt_re_dv_" #member, &dv->bnxt_.member, &missing);
#define MORI_DV_RESOLVE_IONIC(member, ret, params) \
  resolve(handle, "ionic_dv_" #member, &dv->ionic_.member, &missing);
  if (nic == "bnxt") {
    MORI_FOR_EACH_BNXT_DV(MORI_DV_RESOLVE_BNXT)
  } else {
    MORI_FOR_EACH_IONIC_DV(MORI_DV_RESOLVE_IONIC)
  }
#undef MORI_DV_RESOLVE_BNXT
#undef MORI_DV_RESOLVE_IONIC
  if (!missing.empty()) return Status::error(prefix + dv->path_ + " has no " + missing);
  *out = std::move(dv);
  return {};
}

VendorDv::~VendorDv() {
  std::lock_guard<std::mutex> closing(loader_mutex());
  if (handle_) dlclose(handle_);
}

}  // namespace mori::rdma
