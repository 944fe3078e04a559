// The host-initiated blocking putmem, getmem, p and g (shmem/stream_api.hpp): the stream operation
// on the default stream, then a wait for it. Called from a host-backend kernel lane, where C++
// picks them over the device templates of the same names, they are the device calls.
#include <cstring>

#include "mori/shmem/stream_api.hpp"
#include "runtime/backend.hpp"
#include "runtime/error.hpp"
#include "runtime/host_only.hpp"
#include "runtime/stream_checks.hpp"

#if defined(MORI_BACKEND_HOST)
#include "mori/shmem/device_api.hpp"

// The device forms these names have in a kernel lane (runtime/host_only.hpp, MORI_LANE_FORM).
namespace mori::runtime::lane {
int putmem(void* dest, const void* source, size_t bytes, int pe) {
  shmem::putmem<Thread>(dest, source, bytes, pe);
  return 0;
}
int getmem(void* dest, const void* source, size_t bytes, int pe) {
  shmem::getmem<Thread>(dest, source, bytes, pe);
  return 0;
}
template <typename T>
int p(T* dest, T value, int pe) {
  shmem::p<T>(dest, value, pe);
  return 0;
}
template <typename T>
T g(const T* source, int pe) {
  return shmem::g<T>(source, pe);
}
}  // namespace mori::runtime::lane
#endif

namespace mori::shmem {

namespace {

// The wait for an operation the call enqueued (`enqueued`: its status, already reported).
int finish(const char* api, int enqueued) {
  if (enqueued != 0) return -1;
  Status s = backend::stream_synchronize(nullptr);
  return s.ok() ? 0 : runtime::report(api, s);
}

int blocking_rma(const char* api, bool get, void* dest, const void* source, size_t bytes, int pe) {
  return finish(api, runtime::rma_on_stream(api, get, dest, source, bytes, pe, nullptr));
}

// One value through memory the device reaches (on hip the caller's variable is host stack).
template <typename T, typename Move>
int through_bounce(const char* api, T* value, Move&& move) {
  void* bounce = nullptr;
  if (Status s = backend::alloc_host_visible(sizeof(T), &bounce); !s.ok())
    return runtime::report(api, s);
  std::memcpy(bounce, value, sizeof(T));
  const int rc = move(bounce);
  std::memcpy(value, bounce, sizeof(T));
  backend::free_host_visible(bounce);
  return rc;
}

template <typename T>
int host_p(T* dest, T value, int pe) {
  MORI_LANE_FORM(p<T>(dest, value, pe));
  return through_bounce("p", &value, [&](void* bounce) {
    return blocking_rma("p", false, dest, bounce, sizeof(T), pe);
  });
}

template <typename T>
T host_g(const T* source, int pe) {
  MORI_LANE_FORM(g<T>(source, pe));
  T value{};
  const int rc = through_bounce("g", &value, [&](void* bounce) {
    return blocking_rma("g", true, bounce, source, sizeof(T), pe);
  });
  return rc == 0 ? value : T{};
}

}  // namespace

int putmem(void* dest, const void* source, size_t bytes, int pe) {
  MORI_LANE_FORM(putmem(dest, source, bytes, pe));
  return blocking_rma("putmem", false, dest, source, bytes, pe);
}

int getmem(void* dest, const void* source, size_t bytes, int pe) {
  MORI_LANE_FORM(getmem(dest, source, bytes, pe));
  return blocking_rma("getmem", true, dest, source, bytes, pe);
}

#define MORI_HOST_P_G(type, name)                                           \
  int p(type* dest, type value, int pe) { return host_p(dest, value, pe); } \
  type g(const type* source, int pe) { return host_g(source, pe); }
MORI_FOR_EACH_P_C_TYPE(MORI_HOST_P_G)
#undef MORI_HOST_P_G

}  // namespace mori::shmem
