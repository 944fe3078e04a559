#include "runtime/error.hpp"

#include <cstdio>

#include "mori/shmem/host_api.hpp"
#include "runtime/host_only.hpp"

namespace mori::runtime {

thread_local std::string last;  // the reason of this thread's last failed call

int report(const char* api, const Status& status) {
  last = std::string(api) + ": " + status.message();
  std::fprintf(stderr, "mori: %s\n", last.c_str());
  return -1;
}

void clear_error() { last.clear(); }

}  // namespace mori::runtime

namespace mori::shmem {
const char* last_error() {
  runtime::host_only("last_error");
  return runtime::last.c_str();
}
}  // namespace mori::shmem
