#include "backend/hip/host_registrations.hpp"

#include <cstdio>
#include <iterator>
#include <string>

namespace mori::backend {

namespace {
std::string span_text(uintptr_t begin, size_t length) {
  char text[64];
  std::snprintf(text, sizeof text, "[0x%zx, 0x%zx)", static_cast<size_t>(begin),
                static_cast<size_t>(begin + length));
  return text;
}
}  // namespace

std::map<uintptr_t, HostRegistrations::Span>::iterator HostRegistrations::holding(
    uintptr_t address) {
  auto it = spans_.upper_bound(address);
  if (it == spans_.begin()) return spans_.end();
  --it;
  return address - it->first < it->second.length ? it : spans_.end();
}

Status HostRegistrations::acquire(uintptr_t begin, size_t length, uintptr_t host,
                                  uintptr_t* device) {
  const uintptr_t end = begin + length;
  // The first live span ending after `begin` is the only one that can hold or overlap it.
  auto it = spans_.upper_bound(begin);
  if (it != spans_.begin() && std::prev(it)->first + std::prev(it)->second.length > begin) --it;
  if (it != spans_.end() && it->first < end) {
    const uintptr_t live_end = it->first + it->second.length;
    if (it->first > begin || live_end < end) {
      return Status::error("hipHostRegister: the pages " + span_text(begin, length) +
                           " overlap the registered pages " +
                           span_text(it->first, it->second.length) + " without lying inside them");
    }
    ++it->second.users;
    *device = it->second.device + (host - it->first);
    return {};
  }
  uintptr_t span_device = 0;
  MORI_TRY(register_(begin, length, &span_device));
  spans_[begin] = Span{length, span_device, 1};
  *device = span_device + (host - begin);
  return {};
}

Status HostRegistrations::release(uintptr_t host) {
  auto it = holding(host);
  if (it == spans_.end()) {
    char text[96];
    std::snprintf(text, sizeof text, "hipHostUnregister: 0x%zx is in no registered span",
                  static_cast<size_t>(host));
    return Status::error(text);
  }
  if (--it->second.users == 0) {
    unregister_(it->first);
    spans_.erase(it);
  }
  return {};
}

}  // namespace mori::backend
