#include "mori/version.hpp"

namespace mori {

const char* version() { return MORI_VERSION_STRING; }

const char* backend() {
#if defined(MORI_BACKEND_HOST)
  return "host";
#else
  return "hip";
#endif
}

}  // namespace mori
