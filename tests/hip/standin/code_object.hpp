// What the stand-in reads of an AMDGPU code object (an ELF shared object): its target, its global
// variables with their sizes and initial bytes, and each kernel's explicit arguments from the
// AMDGPU metadata note.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace standin {

struct KernelArg {
  size_t offset;  // in the kernarg segment
  size_t size;
};

struct CodeObject {
  std::string arch;                                       // "gfx942"
  std::map<std::string, std::vector<uint8_t>> globals;    // initial bytes, sized as the symbol
  std::map<std::string, std::vector<KernelArg>> kernels;  // explicit arguments, in order
};

// Fails with a one-line reason when `image` is not an AMDGPU code object.
bool read_code_object(const void* image, CodeObject* out, std::string* why);

}  // namespace standin
