// The stream kernel's code objects embedded in libmori_shmem, one per arch it was built for
// (cmake/MoriStreamKernel.cmake generates the table).
#pragma once

namespace mori::backend {

// The stream kernel's block: one block of four wavefronts, each op in Block scope. The kernel
// declares it as its flat work-group size, so that the compiler does not plan registers for
// 1024-thread blocks: with the default bound, clang-22 spent more than 10 minutes on gfx950's
// code object (under 5 with the bound) chasing an occupancy the launch never needs.
inline constexpr unsigned kStreamKernelThreads = 256;

struct StreamKernelImage {
  const char* arch;   // "gfx942"; null ends the table
  const char* image;  // the ELF code object, for hipModuleLoadData
};
extern const StreamKernelImage kStreamKernelImages[];

}  // namespace mori::backend
