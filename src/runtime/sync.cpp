// barrier_all, module_init and module_finalize.
#include <algorithm>
#include <atomic>

#include "mori/shmem/host_api.hpp"
#include "runtime/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/host_only.hpp"
#include "runtime/runtime.hpp"

namespace mori::shmem {

using runtime::report;

int barrier_all() {
  MORI_LANE_FORM(barrier_all());
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  runtime::Runtime* rt = runtime::require_device("barrier_all");
  if (!rt) return -1;
  // This PE's device work and memory writes complete before the others pass the barrier.
  Status s = backend::synchronize();
  // OpenSHMEM: barrier_all completes this PE's outstanding operations (a put_nbi without quiet).
  if (s.ok() && rt->rdma) s = rt->rdma->drain();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (s.ok()) s = rt->boot->barrier();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return s.ok() ? 0 : report("barrier_all", s);
}

int module_init(void* module) {
  runtime::host_only("module_init");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  runtime::Runtime* rt = runtime::require_device("module_init");
  if (!rt) return -1;
  if (Status s = backend::publish_to_module(module, rt->states); !s.ok())
    return report("module_init", s);
  // Later state changes (buffer_register, ...) reach the module too.
  if (std::find(rt->modules.begin(), rt->modules.end(), module) == rt->modules.end())
    rt->modules.push_back(module);
  return 0;
}

int module_finalize(void* module) {
  runtime::host_only("module_finalize");
  std::lock_guard lock(runtime::api_mutex());
  runtime::clear_error();
  runtime::Runtime* rt = runtime::require_device("module_finalize");
  if (!rt) return -1;
  if (!module) return report("module_finalize", "module is null");
  auto it = std::find(rt->modules.begin(), rt->modules.end(), module);
  if (it == rt->modules.end())
    return report("module_finalize", "the module was not given to module_init (or was finalised)");
  // Nothing is copied into it any more: after this call it may be unloaded.
  rt->modules.erase(it);
  return 0;
}

}  // namespace mori::shmem
