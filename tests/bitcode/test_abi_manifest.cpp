// The ABI manifest against the spec, and each built bitcode against the manifest:
//   - every function of the device ABI spec (docs/bitcode.md; its function list is checked in as
//     spec_functions.txt) is in the manifest with exactly that return type, parameter types and
//     parameter names;
//   - the typed families cover every type of the X-macro lists, in every scope they take;
//   - every bitcode (each GPU arch and the host flavour) defines every manifest function with the
//     manifest's LLVM types and extension attributes, so a front end that declares a function from
//     the manifest calls it correctly. Each bitcode is read by its own LLVM's llvm-dis (MORI_TEST_BITCODES:
//     "<bitcode>|<llvm-dis>" entries): LLVM 19 cannot read the gfx950 bitcode, which LLVM 22 wrote.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mori/core/types.hpp"

namespace {

using nlohmann::json;

const json& manifest() {
  static const json m = [] {
    std::ifstream in(MORI_TEST_MANIFEST);
    REQUIRE_MESSAGE(in, "cannot read " MORI_TEST_MANIFEST);
    return json::parse(in);
  }();
  return m;
}

std::map<std::string, json> by_name() {
  std::map<std::string, json> functions;
  for (const json& f : manifest()["functions"]) functions[f["name"]] = f;
  return functions;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Splits at the commas outside parentheses (LLVM attributes such as range(i32 0, 8) hold commas).
std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    depth += (c == '(') - (c == ')');
    if (c == ',' && depth == 0) {
      parts.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) parts.push_back(trim(cur));
  return parts;
}

// "int32_t mori_shmem_x(const T* a, int b);" as return type, name and (type, name) pairs.
struct Prototype {
  std::string ret, name;
  std::vector<std::pair<std::string, std::string>> params;
};

Prototype parse_prototype(const std::string& line) {
  static const std::regex re(R"(^(.+?)\s*\b(mori_shmem_\w+)\((.*)\);$)");
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_match(line, m, re), "not a prototype: " << line);
  Prototype p{trim(m[1]), m[2], {}};
  for (const std::string& param : split_top(m[3])) {
    const size_t cut = param.find_last_of(" *");
    p.params.emplace_back(trim(param.substr(0, cut + 1)), param.substr(cut + 1));
  }
  return p;
}

// The LLVM type and extension attribute of one value of an IR signature.
struct IrValue {
  std::string type, ext;
  bool operator==(const IrValue&) const = default;
};

IrValue ir_value(const std::string& text) {
  static const std::regex type(R"(^(i\d+|ptr|float|double|void)$)");
  IrValue v;
  std::istringstream words(text);
  for (std::string w; words >> w;) {
    if (std::regex_match(w, type)) v.type = w;
    if (w == "signext" || w == "zeroext") v.ext = w;
  }
  return v;
}
IrValue manifest_value(const json& j) { return {j["llvm"], j.value("ext", "")}; }

// Every `define` of a mori_shmem_ function in the bitcode: name -> return value and parameters.
std::map<std::string, std::vector<IrValue>> ir_signatures(const std::string& bitcode,
                                                          const std::string& llvm_dis) {
  const std::string command = llvm_dis + " " + bitcode + " -o -";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  REQUIRE(pipe);
  static const std::regex define(R"(^define (.*) @(mori_shmem_\w+)\((.*)\) .*\{$)");
  std::map<std::string, std::vector<IrValue>> signatures;
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe.get())) {
    std::string line(buffer);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    std::smatch m;
    if (!std::regex_match(line, m, define)) continue;
    std::vector<IrValue>& sig = signatures[m[2]];
    sig.push_back(ir_value(m[1]));
    for (const std::string& p : split_top(m[3])) sig.push_back(ir_value(p));
  }
  return signatures;
}

std::vector<std::string> split(const std::string& list, char sep) {
  std::vector<std::string> items;
  std::istringstream in(list);
  for (std::string item; std::getline(in, item, sep);) items.push_back(item);
  return items;
}

}  // namespace

TEST_CASE("every function of the spec has its exact C signature in the manifest") {
  const auto functions = by_name();
  std::ifstream spec(MORI_TEST_SPEC);
  REQUIRE(spec);
  int count = 0;
  for (std::string line; std::getline(spec, line);) {
    if (line.empty() || line[0] == '#') continue;
    const Prototype p = parse_prototype(line);
    ++count;
    CAPTURE(line);
    auto it = functions.find(p.name);
    REQUIRE_MESSAGE(it != functions.end(), p.name << " is missing from the manifest");
    const json& f = it->second;
    CHECK(f["returns"]["type"] == p.ret);
    REQUIRE(f["params"].size() == p.params.size());
    for (size_t i = 0; i < p.params.size(); ++i) {
      CHECK(f["params"][i]["type"] == p.params[i].first);
      CHECK(f["params"][i]["name"] == p.params[i].second);
    }
  }
  CHECK(count == 98);
}

TEST_CASE("manifest names are unique, follow the scheme and agree with their scope") {
  const json& m = manifest();
  CHECK(m["function_count"] == m["functions"].size());
  std::set<std::string> seen;
  static const std::regex scheme(R"(^mori_shmem_[a-z0-9_]+$)");
  for (const json& f : m["functions"]) {
    const std::string name = f["name"];
    CAPTURE(name);
    CHECK(seen.insert(name).second);
    CHECK(std::regex_match(name, scheme));
    for (const char* scope : {"warp", "block"})
      if (name.ends_with(std::string("_") + scope)) CHECK(f["scope"] == scope);
    if (f["returns"]["status"]) CHECK(f["returns"]["type"] == "int");
  }
}

TEST_CASE("the typed families cover every type of the X-macro lists") {
  const auto functions = by_name();
  std::vector<std::string> expected;
  for (const char* scope : {"thread", "warp", "block"}) {
    const std::string s = scope;
#define MORI_EXPECT_RMA(T, NAME)                                                 \
  for (const char* op : {"put", "get"}) {                                        \
    expected.push_back(std::string("mori_shmem_") + op + "_" #NAME "_nbi_" + s); \
    expected.push_back(std::string("mori_shmem_") + op + "_" #NAME "_" + s);     \
  }                                                                              \
  expected.push_back("mori_shmem_put_" #NAME "_nbi_signal_" + s);                \
  expected.push_back("mori_shmem_put_" #NAME "_signal_" + s);
    MORI_FOR_EACH_TYPE(MORI_EXPECT_RMA)
#undef MORI_EXPECT_RMA
  }
#define MORI_EXPECT_SINGLE(T, NAME)             \
  expected.push_back("mori_shmem_" #NAME "_p"); \
  expected.push_back("mori_shmem_" #NAME "_g");
  MORI_FOR_EACH_P_TYPE(MORI_EXPECT_SINGLE)
#undef MORI_EXPECT_SINGLE
  const char* amo_ops[] = {"inc",      "add",       "set",       "and",         "or",
                           "xor",      "fetch",     "fetch_inc", "fetch_add",   "fetch_and",
                           "fetch_or", "fetch_xor", "swap",      "compare_swap"};
  // The fetching ones also have an nbi form, <type>_atomic_<op>_nbi_thread.
  const char* fetching_ops[] = {"fetch",    "fetch_inc", "fetch_add", "fetch_and",
                                "fetch_or", "fetch_xor", "swap",      "compare_swap"};
  const char* cmps[] = {"eq", "ne", "gt", "le", "lt", "ge"};
#define MORI_EXPECT_AMO(T, NAME)                                                          \
  for (const char* op : amo_ops)                                                          \
    expected.push_back(std::string("mori_shmem_" #NAME "_atomic_") + op + "_thread");     \
  for (const char* op : fetching_ops)                                                     \
    expected.push_back(std::string("mori_shmem_" #NAME "_atomic_") + op + "_nbi_thread"); \
  expected.push_back("mori_shmem_atomic_" #NAME "_nonfetch_thread");                      \
  expected.push_back("mori_shmem_atomic_" #NAME "_fetch_thread");                         \
  for (const char* cmp : cmps)                                                            \
    for (const char* op : {"_wait_until_", "_test_"})                                     \
      expected.push_back(std::string("mori_shmem_" #NAME) + op + cmp);                    \
  for (const char* set : {"all", "any", "some"})                                          \
    for (const char* op : {"_wait_until_", "_test_"})                                     \
      for (const char* vector : {"", "_vector"})                                          \
        expected.push_back(std::string("mori_shmem_" #NAME) + op + set + vector);
  MORI_FOR_EACH_AMO_TYPE(MORI_EXPECT_AMO)
#undef MORI_EXPECT_AMO
  // float and double: OpenSHMEM's extended AMOs (fetch, set, swap) and no others.
  std::vector<std::string> refused;
#define MORI_EXPECT_FLOAT_AMO(T, NAME)                                   \
  for (const std::string op : amo_ops)                                   \
    (op == "fetch" || op == "set" || op == "swap" ? expected : refused)  \
        .push_back("mori_shmem_" #NAME "_atomic_" + op + "_thread");     \
  for (const std::string op : fetching_ops)                              \
    (op == "fetch" || op == "swap" ? expected : refused)                 \
        .push_back("mori_shmem_" #NAME "_atomic_" + op + "_nbi_thread"); \
  for (const char* generic : {"_nonfetch_thread", "_fetch_thread"})      \
    refused.push_back(std::string("mori_shmem_atomic_" #NAME) + generic);
  MORI_FOR_EACH_AMO_FLOAT_TYPE(MORI_EXPECT_FLOAT_AMO)
#undef MORI_EXPECT_FLOAT_AMO
  // Strided RMA is sized only (functions.def): iput<bits>_<scope> and iget<bits>_<scope>.
  for (const char* scope : {"thread", "warp", "block"})
    for (const char* op : {"iput", "iget"}) {
#define MORI_EXPECT_STRIDED(bits) \
  expected.push_back(std::string("mori_shmem_") + op + #bits "_" + scope);
      MORI_FOR_EACH_RMA_SIZE(MORI_EXPECT_STRIDED)
#undef MORI_EXPECT_STRIDED
      refused.push_back(std::string("mori_shmem_") + op + "_float_" + scope);
    }
  // OpenSHMEM's distributed locks, on a symmetric long.
  for (const char* op : {"set_lock", "test_lock", "clear_lock"})
    expected.push_back(std::string("mori_shmem_") + op);
  for (const std::string& name : expected) CHECK_MESSAGE(functions.count(name), name);
  for (const std::string& name : refused) CHECK_MESSAGE(!functions.count(name), name);
}

TEST_CASE("every bitcode defines every manifest function with the manifest's LLVM signature") {
  const json& m = manifest();
  for (const std::string& entry : split(MORI_TEST_BITCODES, ',')) {
    const std::vector<std::string> parts = split(entry, '|');
    REQUIRE(parts.size() == 2);
    const std::string& bitcode = parts[0];
    CAPTURE(bitcode);
    const auto signatures = ir_signatures(bitcode, parts[1]);
    CHECK(signatures.size() == m["functions"].size());
    for (const json& f : m["functions"]) {
      const std::string name = f["name"];
      CAPTURE(name);
      auto it = signatures.find(name);
      REQUIRE_MESSAGE(it != signatures.end(), name << " is not defined");
      std::vector<IrValue> want{manifest_value(f["returns"])};
      for (const json& p : f["params"]) want.push_back(manifest_value(p));
      CHECK(it->second == want);
    }
  }
}
