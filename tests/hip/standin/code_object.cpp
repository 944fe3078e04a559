// Reads an AMDGPU code object: ELF64 headers (elf.h), the dynamic symbol table, and the msgpack
// metadata note (LLVM AMDGPUUsage, "Code Object V3 to V5 Metadata": amdhsa.kernels, each with .name
// and .args, each argument with .offset, .size and .value_kind).
#include "code_object.hpp"

#include <elf.h>

#include <cstring>

namespace standin {

namespace {

constexpr unsigned kNtAmdgpuMetadata = 32;  // LLVM AMDGPUUsage, "Note Records"

// LLVM AMDGPUUsage, "AMDGPU ELF Header": EF_AMDGPU_MACH (the low byte of e_flags).
const char* arch_of(uint32_t flags) {
  switch (flags & 0xff) {
    case 0x3f:
      return "gfx90a";
    case 0x40:
      return "gfx940";
    case 0x4c:
      return "gfx942";
    case 0x4f:
      return "gfx950";
    default:
      return "unknown";
  }
}

// Enough of msgpack (github.com/msgpack/msgpack spec.md) for the metadata: maps, arrays, strings,
// integers; anything else is skipped by its length.
class Msgpack {
 public:
  Msgpack(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  bool ok() const { return ok_; }

  // Containers: the number of entries (map: pairs), or -1 when the next value is not one.
  long map() { return container(0x80, 0xde, 0xdf); }
  long array() { return container(0x90, 0xdc, 0xdd); }
  bool string(std::string* out) {
    size_t n;
    const uint8_t b = peek();
    if ((b & 0xe0) == 0xa0) {
      n = b & 0x1f;
      ++p_;
    } else if (b >= 0xd9 && b <= 0xdb) {
      ++p_;
      n = be(size_t{1} << (b - 0xd9));
    } else {
      return false;
    }
    if (!take(n)) return false;
    out->assign(reinterpret_cast<const char*>(p_ - n), n);
    return true;
  }
  bool integer(uint64_t* out) {
    const uint8_t b = peek();
    if (b < 0x80) {
      ++p_;
      *out = b;
    } else if (b >= 0xcc && b <= 0xcf) {
      ++p_;
      *out = be(size_t{1} << (b - 0xcc));
    } else if (b >= 0xd0 && b <= 0xd3) {
      ++p_;
      *out = be(size_t{1} << (b - 0xd0));
    } else {
      return false;
    }
    return ok_;
  }
  void skip() {
    if (long n = map(); n >= 0) {
      for (long i = 0; i < 2 * n && ok_; ++i) skip();
      return;
    }
    if (long n = array(); n >= 0) {
      for (long i = 0; i < n && ok_; ++i) skip();
      return;
    }
    std::string s;
    uint64_t v;
    if (string(&s) || integer(&v)) return;
    const uint8_t b = peek();
    ++p_;
    if (b == 0xc0 || b == 0xc2 || b == 0xc3 || b >= 0xe0) return;
    if (b >= 0xc4 && b <= 0xc6) {
      take(be(size_t{1} << (b - 0xc4)));
    } else if (b == 0xca || b == 0xcb) {
      take(b == 0xca ? 4 : 8);
    } else {
      ok_ = false;
    }
  }

 private:
  uint8_t peek() {
    if (p_ >= end_) ok_ = false;
    return ok_ ? *p_ : 0xc1;
  }
  bool take(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return ok_ = false;
    p_ += n;
    return true;
  }
  uint64_t be(size_t n) {
    if (!take(n)) return 0;
    const uint8_t* q = p_ - n;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = v << 8 | q[i];
    return v;
  }
  long container(uint8_t fix, uint8_t b16, uint8_t b32) {
    const uint8_t b = peek();
    if ((b & 0xf0) == fix) {
      ++p_;
      return b & 0x0f;
    }
    if (b == b16 || b == b32) {
      ++p_;
      return static_cast<long>(be(b == b16 ? 2 : 4));
    }
    return -1;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

// One kernel's map: its name and explicit (not hidden_*) arguments.
void read_kernel(Msgpack& m, CodeObject* out) {
  std::string name;
  std::vector<KernelArg> args;
  for (long i = 0, n = m.map(); i < n && m.ok(); ++i) {
    std::string key;
    if (!m.string(&key)) return m.skip();
    if (key == ".name") {
      m.string(&name);
    } else if (key == ".args") {
      for (long a = 0, na = m.array(); a < na && m.ok(); ++a) {
        KernelArg arg{};
        std::string kind;
        for (long f = 0, nf = m.map(); f < nf && m.ok(); ++f) {
          std::string field;
          uint64_t v = 0;
          m.string(&field);
          if (field == ".offset" && m.integer(&v)) {
            arg.offset = v;
          } else if (field == ".size" && m.integer(&v)) {
            arg.size = v;
          } else if (field == ".value_kind") {
            m.string(&kind);
          } else {
            m.skip();
          }
        }
        if (kind.rfind("hidden_", 0) != 0) args.push_back(arg);
      }
    } else {
      m.skip();
    }
  }
  if (!name.empty()) out->kernels[name] = std::move(args);
}

void read_metadata(const uint8_t* desc, size_t size, CodeObject* out) {
  Msgpack m(desc, desc + size);
  for (long i = 0, n = m.map(); i < n && m.ok(); ++i) {
    std::string key;
    if (!m.string(&key)) return;
    if (key != "amdhsa.kernels") {
      m.skip();
      continue;
    }
    for (long k = 0, nk = m.array(); k < nk && m.ok(); ++k) read_kernel(m, out);
  }
}

}  // namespace

bool read_code_object(const void* image, CodeObject* out, std::string* why) {
  const auto* base = static_cast<const uint8_t*>(image);
  const auto* eh = static_cast<const Elf64_Ehdr*>(image);
  if (!image || std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_AMDGPU) {
    *why = "not an AMDGPU ELF code object";
    return false;
  }
  out->arch = arch_of(eh->e_flags);
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type == SHT_NOTE) {
      for (size_t at = 0; at + sizeof(Elf64_Nhdr) <= sh[i].sh_size;) {
        const auto* note = reinterpret_cast<const Elf64_Nhdr*>(base + sh[i].sh_offset + at);
        const size_t name_bytes = (note->n_namesz + 3) & ~size_t{3};
        const uint8_t* desc = reinterpret_cast<const uint8_t*>(note + 1) + name_bytes;
        if (note->n_type == kNtAmdgpuMetadata) read_metadata(desc, note->n_descsz, out);
        at += sizeof *note + name_bytes + ((note->n_descsz + 3) & ~size_t{3});
      }
    }
    if (sh[i].sh_type != SHT_DYNSYM) continue;
    const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
    const char* names = reinterpret_cast<const char*>(base + sh[sh[i].sh_link].sh_offset);
    for (size_t s = 0; s < sh[i].sh_size / sizeof(Elf64_Sym); ++s) {
      const Elf64_Sym& sym = syms[s];
      const std::string name = names + sym.st_name;
      if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF ||
          sym.st_shndx >= eh->e_shnum || name.ends_with(".kd"))
        continue;
      const Elf64_Shdr& in = sh[sym.st_shndx];
      std::vector<uint8_t> bytes(sym.st_size);
      if (in.sh_type != SHT_NOBITS && sym.st_size)
        std::memcpy(bytes.data(), base + in.sh_offset + (sym.st_value - in.sh_addr), sym.st_size);
      out->globals[name] = std::move(bytes);
    }
  }
  return true;
}

}  // namespace standin
