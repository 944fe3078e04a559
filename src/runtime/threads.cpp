// init_thread and query_thread (OpenSHMEM 1.5, section 9.2): the thread level mori gives.
#include <string>

#include "mori/shmem/host_api.hpp"
#include "runtime/error.hpp"
#include "runtime/host_only.hpp"
#include "runtime/runtime.hpp"

namespace mori::shmem {

using runtime::report;

int init_thread(int requested, int* provided) {
  runtime::host_only("init_thread");
  runtime::clear_error();
  if (!provided) return report("init_thread", "provided is null");
  if (requested < kThreadSingle || requested > kThreadMultiple) {
    return report("init_thread", "requested level " + std::to_string(requested) +
                                     " is none of kThreadSingle (0), kThreadFunneled (1), "
                                     "kThreadSerialized (2) and kThreadMultiple (3)");
  }
  if (init() != 0) return -1;
  return query_thread(provided);
}

int query_thread(int* provided) {
  runtime::host_only("query_thread");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  if (!provided) return report("query_thread", "provided is null");
  runtime::Runtime* rt = runtime::require("query_thread");
  if (!rt) return -1;
  *provided = rt->thread_level;
  return 0;
}

}  // namespace mori::shmem
