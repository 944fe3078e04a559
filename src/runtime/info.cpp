// info_get_version and info_get_name: which OpenSHMEM specification this API follows, and which
// library this is. Neither needs init (OpenSHMEM allows them at any time).
#include <cstdio>

#include "mori/shmem/host_api.hpp"
#include "mori/version.hpp"
#include "runtime/error.hpp"
#include "runtime/host_only.hpp"

namespace mori::shmem {

using runtime::report;

void info_get_version(int* major, int* minor) {
  runtime::host_only("info_get_version");
  runtime::clear_error();
  if (!major || !minor) {
    report("info_get_version", major ? "minor is null" : "major is null");
    return;
  }
  *major = 1;
  *minor = 5;
}

void info_get_name(char* name) {
  runtime::host_only("info_get_name");
  runtime::clear_error();
  if (!name) {
    report("info_get_name", "name is null");
    return;
  }
  static_assert(sizeof("mori " MORI_VERSION_STRING) <= kMaxNameLen,
                "the name must fit what info_get_name promises its caller");
  std::snprintf(name, kMaxNameLen, "mori %s", MORI_VERSION_STRING);
}

}  // namespace mori::shmem
