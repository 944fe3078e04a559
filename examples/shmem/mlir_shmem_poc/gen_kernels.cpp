// gen_kernels: writes the proof-of-concept kernels that call mori's device ABI, as a front end
// would, in one of two syntaxes:
//   --syntax mlir   MLIR text in the llvm dialect, plus rocdl for amdgcn (path A; mlir-translate-19
//                   then turns it into LLVM IR). There are no MLIR Python bindings on this machine,
//                   so the text is generated here, the way a compiler's printer would.
//   --syntax llvm   LLVM IR text, directly (path B).
// and for one of two targets: amdgcn (GPU kernels, thread 0 of the block does the work) or host
// (plain functions that mori::host::launch runs on CPU threads; launch them with one lane).
//
// The mori functions are declared from the ABI manifest, as a front end must: their LLVM types come
// from mori_shmem_device_abi.json, never from a hand-written prototype.
//
//   shmem_basic_kernel(int32_t* out)  out[0] = mori_shmem_my_pe(), out[1] = mori_shmem_n_pes()
//   shmem_put_kernel(int32_t* dest)   mori_shmem_int32_p(dest, my_pe, (my_pe + 1) % n_pes, 0), then
//                                     mori_shmem_quiet_thread(): a ring, each PE writes the next
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

enum class Syntax { kMlir, kLlvm };

// A mori function as the manifest declares it.
struct Callee {
  std::string name, ret;
  std::vector<std::string> params;  // LLVM types, with any extension attribute
};

Callee from_manifest(const json& manifest, const std::string& name) {
  for (const json& f : manifest.at("functions")) {
    if (f.at("name") != name) continue;
    Callee c{name, f.at("returns").at("llvm"), {}};
    for (const json& p : f.at("params")) c.params.push_back(p.at("llvm"));
    return c;
  }
  throw std::runtime_error("the manifest has no function " + name);
}

// Writes one module of kernels in either syntax. Values are SSA names; every integer is i32.
class Writer {
 public:
  Writer(Syntax syntax, bool amdgcn) : syntax_(syntax), amdgcn_(amdgcn) {}

  void begin_module(const std::string& triple, const std::string& datalayout) {
    if (mlir()) {
      out_ << "module attributes {llvm.target_triple = \"" << triple << "\", llvm.data_layout = \""
           << datalayout << "\"} {\n";
    } else {
      out_ << "target datalayout = \"" << datalayout << "\"\ntarget triple = \"" << triple
           << "\"\n\n";
      if (amdgcn_) out_ << "declare i32 @llvm.amdgcn.workitem.id.x()\n";
    }
  }
  void declare(const Callee& c) {
    if (mlir()) {
      std::string types;
      for (const auto& p : c.params) types += (types.empty() ? "" : ", ") + mlir_type(p);
      out_ << "  llvm.func @" << c.name << "(" << types << ") -> " << mlir_type(c.ret) << "\n";
    } else {
      std::string types;
      for (const auto& p : c.params) types += (types.empty() ? "" : ", ") + p;
      out_ << "declare " << c.ret << " @" << c.name << "(" << types << ")\n";
    }
  }
  void end_module() {
    if (mlir()) out_ << "}\n";
  }

  // A kernel taking one pointer; on amdgcn only thread 0 runs the body.
  void begin_kernel(const std::string& name, const std::string& param) {
    next_ = 0;
    if (mlir()) {
      out_ << "\n  llvm.func @" << name << "(%" << param << ": !llvm.ptr)"
           << (amdgcn_ ? " attributes {rocdl.kernel}" : "") << " {\n";
    } else {
      out_ << "\ndefine " << (amdgcn_ ? "amdgpu_kernel " : "") << "void @" << name << "(ptr %"
           << param << ") {\nentry:\n";
    }
    if (!amdgcn_) return;
    const std::string zero = constant(0), tid = fresh();
    const std::string first = fresh();
    if (mlir()) {
      line(tid + " = rocdl.workitem.id.x : i32");
      line(first + " = llvm.icmp \"eq\" " + tid + ", " + zero + " : i32");
      line("llvm.cond_br " + first + ", ^work, ^done");
      out_ << "  ^work:\n";
    } else {
      line(tid + " = call i32 @llvm.amdgcn.workitem.id.x()");
      line(first + " = icmp eq i32 " + tid + ", " + zero);
      line("br i1 " + first + ", label %work, label %done");
      out_ << "work:\n";
    }
  }
  void end_kernel() {
    if (amdgcn_) {
      line(mlir() ? "llvm.br ^done" : "br label %done");
      out_ << (mlir() ? "  ^done:\n" : "done:\n");
    }
    line(mlir() ? "llvm.return" : "ret void");
    out_ << (mlir() ? "  }\n" : "}\n");
  }

  std::string constant(int v) {
    if (!mlir()) return std::to_string(v);  // LLVM IR takes immediates
    const std::string r = fresh();
    line(r + " = llvm.mlir.constant(" + std::to_string(v) + " : i32) : i32");
    return r;
  }
  std::string call(const Callee& c, const std::vector<std::string>& args) {
    const std::string r = fresh();
    std::string list, types;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string sep = i ? ", " : "";
      list += sep + (mlir() ? "" : c.params[i] + " ") + args[i];
      types += sep + mlir_type(c.params[i]);
    }
    if (mlir())
      line(r + " = llvm.call @" + c.name + "(" + list + ") : (" + types + ") -> " +
           mlir_type(c.ret));
    else
      line(r + " = call " + c.ret + " @" + c.name + "(" + list + ")");
    return r;
  }
  std::string binary(const std::string& op, const std::string& a, const std::string& b) {
    const std::string r = fresh();
    line(r + " = " + (mlir() ? "llvm." + op + " " : op + " i32 ") + a + ", " + b +
         (mlir() ? " : i32" : ""));
    return r;
  }
  // &ptr[index] for an i32 array.
  std::string element(const std::string& ptr, int index) {
    const std::string r = fresh();
    if (mlir())
      line(r + " = llvm.getelementptr " + ptr + "[" + std::to_string(index) +
           "] : (!llvm.ptr) -> !llvm.ptr, i32");
    else
      line(r + " = getelementptr i32, ptr " + ptr + ", i64 " + std::to_string(index));
    return r;
  }
  void store(const std::string& value, const std::string& ptr) {
    line(mlir() ? "llvm.store " + value + ", " + ptr + " : i32, !llvm.ptr"
                : "store i32 " + value + ", ptr " + ptr);
  }

  std::string text() const { return out_.str(); }

 private:
  bool mlir() const { return syntax_ == Syntax::kMlir; }
  std::string fresh() { return "%v" + std::to_string(next_++); }
  void line(const std::string& s) { out_ << (mlir() ? "    " : "  ") << s << "\n"; }
  static std::string mlir_type(const std::string& llvm) {
    const std::string type = llvm.substr(0, llvm.find(' '));  // drop signext / zeroext
    if (type == "ptr") return "!llvm.ptr";
    if (type == "float") return "f32";
    if (type == "double") return "f64";
    return type;
  }

  Syntax syntax_;
  bool amdgcn_;
  int next_ = 0;
  std::ostringstream out_;
};

std::string kernels(const json& manifest, Syntax syntax, bool amdgcn, const std::string& triple,
                    const std::string& datalayout) {
  const Callee my_pe = from_manifest(manifest, "mori_shmem_my_pe");
  const Callee n_pes = from_manifest(manifest, "mori_shmem_n_pes");
  const Callee int32_p = from_manifest(manifest, "mori_shmem_int32_p");
  const Callee quiet = from_manifest(manifest, "mori_shmem_quiet_thread");

  Writer w(syntax, amdgcn);
  w.begin_module(triple, datalayout);
  for (const Callee* c : {&my_pe, &n_pes, &int32_p, &quiet}) w.declare(*c);

  w.begin_kernel("shmem_basic_kernel", "out");
  w.store(w.call(my_pe, {}), "%out");
  const std::string n = w.call(n_pes, {});
  w.store(n, w.element("%out", 1));
  w.end_kernel();

  w.begin_kernel("shmem_put_kernel", "dest");
  const std::string pe = w.call(my_pe, {}), count = w.call(n_pes, {});
  const std::string next = w.binary("srem", w.binary("add", pe, w.constant(1)), count);
  w.call(int32_p, {"%dest", pe, next, w.constant(0)});
  w.call(quiet, {});
  w.end_kernel();

  w.end_module();
  return w.text();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Writes the mori shmem proof-of-concept kernels as MLIR or LLVM IR text"};
  std::string syntax = "llvm", target = "amdgcn", manifest_path, triple, datalayout, output;
  app.add_option("--syntax", syntax, "mlir (path A) or llvm (path B)")
      ->check(CLI::IsMember({"mlir", "llvm"}));
  app.add_option("--target", target, "amdgcn or host")->check(CLI::IsMember({"amdgcn", "host"}));
  app.add_option("--manifest", manifest_path, "mori_shmem_device_abi.json")->required();
  app.add_option("--triple", triple, "the bitcode's target triple")->required();
  app.add_option("--datalayout", datalayout, "the bitcode's data layout")->required();
  app.add_option("-o,--output", output, "file to write")->required();
  CLI11_PARSE(app, argc, argv);

  try {
    std::ifstream in(manifest_path);
    if (!in) throw std::runtime_error("cannot read " + manifest_path);
    const std::string text =
        kernels(json::parse(in), syntax == "mlir" ? Syntax::kMlir : Syntax::kLlvm,
                target == "amdgcn", triple, datalayout);
    std::ofstream out(output);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + output);
  } catch (const std::exception& e) {
    std::cerr << "gen_kernels: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
