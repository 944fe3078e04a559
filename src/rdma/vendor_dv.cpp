// VendorDv::load: dlopen a BNXT or Ionic direct-verbs library and resolve its functions
// (vendor_dv.hpp, which cites the sources of every name). Nothing is linked at build time: the
// library comes from the NIC vendor's rdma-core or user library on the machine that runs.
#include "rdma/vendor_dv.hpp"

#include <dlfcn.h>
#include <link.h>

#include <iterator>

namespace mori::rdma {
namespace {

// The functions each family needs, in the order of BnxtDv / IonicDv.
constexpr const char* kBnxtSymbols[] = {
    "bnxt_re_dv_umem_reg",   "bnxt_re_dv_umem_dereg", "bnxt_re_dv_create_cq",
    "bnxt_re_dv_destroy_cq", "bnxt_re_dv_create_qp",  "bnxt_re_dv_destroy_qp",
    "bnxt_re_dv_modify_qp",  "bnxt_re_dv_init_obj",   "bnxt_re_dv_get_default_db_region",
};
constexpr const char* kIonicSymbols[] = {
    "ionic_dv_get_ctx",          "ionic_dv_get_qp",       "ionic_dv_get_cq",
    "ionic_dv_qp_get_udma_idx",  "ionic_dv_pd_set_sqcmb", "ionic_dv_pd_set_rqcmb",
    "ionic_dv_pd_set_udma_mask",
};

struct Family {
  const char* what;     // what the library provides, for the error
  const char* package;  // what to install
};

Family family_of(const std::string& nic) {
  if (nic == "bnxt") return {"Broadcom's bnxt_re direct verbs", "libbnxt_re"};
  return {"AMD's ionic direct verbs", "libionic"};
}

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}

template <typename F>
void take(F* fn, void* symbol) {
  *fn = reinterpret_cast<F>(symbol);
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

  const bool bnxt = nic == "bnxt";
  const char* const* symbols = bnxt ? std::begin(kBnxtSymbols) : std::begin(kIonicSymbols);
  const size_t count = bnxt ? std::size(kBnxtSymbols) : std::size(kIonicSymbols);
  std::vector<void*> found(count);
  std::string missing;
  for (size_t i = 0; i < count; ++i) {
    found[i] = dlsym(dv->handle_, symbols[i]);
    if (!found[i]) missing += (missing.empty() ? "" : ", ") + std::string(symbols[i]);
  }
  if (!missing.empty()) return Status::error(prefix + dv->path_ + " has no " + missing);

  if (bnxt) {
    BnxtDv& b = dv->bnxt_;
    take(&b.umem_reg, found[0]);
    take(&b.umem_dereg, found[1]);
    take(&b.create_cq, found[2]);
    take(&b.destroy_cq, found[3]);
    take(&b.create_qp, found[4]);
    take(&b.destroy_qp, found[5]);
    take(&b.modify_qp, found[6]);
    take(&b.init_obj, found[7]);
    take(&b.get_default_db_region, found[8]);
  } else {
    IonicDv& o = dv->ionic_;
    take(&o.get_ctx, found[0]);
    take(&o.get_qp, found[1]);
    take(&o.get_cq, found[2]);
    take(&o.qp_get_udma_idx, found[3]);
    take(&o.pd_set_sqcmb, found[4]);
    take(&o.pd_set_rqcmb, found[5]);
    take(&o.pd_set_udma_mask, found[6]);
  }
  *out = std::move(dv);
  return {};
}

VendorDv::~VendorDv() {
  if (handle_) dlclose(handle_);
}

}  // namespace mori::rdma
