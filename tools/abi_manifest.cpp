// mori_abi_manifest: writes the JSON manifest of the extern "C" device ABI, which front ends read
// to declare and call the functions of libmori_shmem_device.bc (docs/bitcode.md). It expands
// src/abi/functions.def, the list that src/abi/device_abi.cpp expands into the wrappers themselves,
// so the manifest and the bitcode cannot disagree.
//
//   mori_abi_manifest -o mori_shmem_device_abi.json
//   mori_abi_manifest --names        one function name per line (for the build script's checks)
#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "mori/core/types.hpp"
#include "mori/state/amo.hpp"
#include "mori/state/gpu_states.hpp"
#include "mori/version.hpp"

namespace mori::abi {

using Json = nlohmann::ordered_json;
using state::atomicType;
using state::Cmp;

// A C type as the manifest gives it: its spelling in the spec, its LLVM IR type, and the extension
// attribute clang puts on sub-word integers. amdgcn and x86-64 agree on all of these for every ABI
// type (64-bit long and pointers, signed char, int-sized enums).
template <typename T>
Json c_type(const char* spelling) {
  using U = std::remove_cv_t<T>;
  Json j = {{"type", spelling}};
  if constexpr (std::is_pointer_v<U>) {
    j["llvm"] = "ptr";
  } else if constexpr (std::is_floating_point_v<U>) {
    static_assert(sizeof(U) == 4 || sizeof(U) == 8, "the ABI passes float and double only");
    j["llvm"] = sizeof(U) == 4 ? "float" : "double";
  } else {
    using I = typename std::conditional_t<std::is_enum_v<U>, std::underlying_type<U>,
                                          std::type_identity<U>>::type;
    static_assert(std::is_integral_v<I>, "an ABI value is a pointer, a number or an int enum");
    j["llvm"] = "i" + std::to_string(8 * sizeof(I));
    if (sizeof(I) < 4) j["ext"] = std::is_signed_v<I> ? "signext" : "zeroext";
  }
  return j;
}

template <typename T>
Json param(const char* spelling, const char* name) {
  Json j = {{"name", name}};
  j.update(c_type<T>(spelling));
  return j;
}

class Manifest {
 public:
  Manifest() {
#define MORI_ABI_UNPAREN(...) __VA_ARGS__
#define MORI_ABI_P(type, name) param<type>(#type, #name)
#define MORI_ABI_FAMILY(name) family_ = #name;
#define MORI_ABI_STATUS(name, scope, params, call) \
  add("mori_shmem_" #name, #scope, c_type<int>("int"), true, {MORI_ABI_UNPAREN params});
#define MORI_ABI_VALUE(ret, name, scope, params, call) \
  add("mori_shmem_" #name, #scope, c_type<ret>(#ret), false, {MORI_ABI_UNPAREN params});
#include "abi/functions.def"
  }

  const Json& functions() const { return functions_; }

 private:
  void add(const std::string& name, const char* scope, Json returns, bool status,
           std::vector<Json> params) {
    if (!names_.insert(name).second)
      throw std::logic_error("functions.def lists " + name + " twice");
    returns["status"] = status;  // true: the int result is 0, as the spec's "returns int 0"
    functions_.push_back({{"name", name},
                          {"family", family_},
                          {"scope", scope},
                          {"returns", std::move(returns)},
                          {"params", std::move(params)}});
  }

  std::string family_;
  std::set<std::string> names_;
  Json functions_ = Json::array();
};

Json enums() {
  Json amo;
#define MORI_AMO_ENTRY(code, number, ...) amo[#code] = number;
  MORI_FOR_EACH_AMO(MORI_AMO_ENTRY)
#undef MORI_AMO_ENTRY
  amo["AMO_SIGNAL_SET"] = static_cast<int>(state::AMO_SIGNAL_SET);  // the AMO_ spellings of 9, 10
  amo["AMO_SIGNAL_ADD"] = static_cast<int>(state::AMO_SIGNAL_ADD);
  Json cmp;
#define MORI_CMP_ENTRY(code, number, ...) cmp[#code] = number;
  MORI_FOR_EACH_CMP(MORI_CMP_ENTRY)
#undef MORI_CMP_ENTRY
  return {{"atomicType", amo}, {"Cmp", cmp}};
}

Json manifest() {
  const Manifest m;
  Json j;
  j["library"] = "libmori_shmem_device.bc";
  j["mori_version"] = MORI_VERSION_STRING;
  j["naming"] = "mori_shmem_<op>[_<type>][_nbi][_<scope>]";
  j["device_state"] = {{"symbol", "_ZN4mori5shmem15globalGpuStatesE"},
                       {"demangled", "mori::shmem::globalGpuStates"},
                       {"bytes", sizeof(state::GpuStates)},
                       {"abi_version", state::kGpuStatesAbiVersion},
                       {"abi_version_symbol", "mori_shmem_gpu_states_abi_version"}};
  j["enums"] = enums();
  j["function_count"] = m.functions().size();
  j["functions"] = m.functions();
  return j;
}

}  // namespace mori::abi

int main(int argc, char** argv) {
  CLI::App app{"Writes the JSON manifest of mori's extern \"C\" device ABI"};
  std::string output;
  bool names = false;
  app.add_option("-o,--output", output, "file to write (default: standard output)");
  app.add_flag("--names", names, "print only the function names, one per line");
  CLI11_PARSE(app, argc, argv);

  const auto j = mori::abi::manifest();
  std::ofstream file;
  if (!output.empty()) {
    file.open(output);
    if (!file) {
      std::cerr << "mori_abi_manifest: cannot write " << output << "\n";
      return 1;
    }
  }
  std::ostream& out = output.empty() ? std::cout : file;
  if (names) {
    for (const auto& f : j["functions"]) out << f["name"].get<std::string>() << "\n";
  } else {
    out << j.dump(2) << "\n";
  }
  return out.good() ? 0 : 1;
}
