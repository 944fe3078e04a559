// The stream kernel's code objects embedded in libmori_shmem, one per arch it was built for
// (cmake/MoriStreamKernel.cmake generates the table).
#pragma once

namespace mori::backend {

struct StreamKernelImage {
  const char* arch;   // "gfx942"; null ends the table
  const char* image;  // the ELF code object, for hipModuleLoadData
};
extern const StreamKernelImage kStreamKernelImages[];

}  // namespace mori::backend
