// new_unique_id() and the process-wide table of the listeners it opened.
#include "bootstrap/id_listener.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/unique_id.hpp"

namespace mori::bootstrap {
namespace {

struct OpenListener {
  uint64_t nonce;
  Fd fd;
};

std::mutex& listeners_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::vector<OpenListener>& listeners() {
  static std::vector<OpenListener> open;
  return open;
}

// The address of the interface MORI_SOCKET_IFNAME names: its IPv4 address if it has one, else a
// global IPv6 address (a link-local one would need a scope that the ID does not carry).
Status interface_address(const std::string& name, UniqueIdFields* fields) {
  const std::string quoted = "MORI_SOCKET_IFNAME=\"" + name + "\"";
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return Status::error(quoted + ": cannot list network interfaces: " + std::strerror(errno));
  }
  bool found_name = false, found_v6 = false;
  std::vector<std::string> names;
  UniqueIdFields v6;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_name == nullptr) continue;
    if (std::find(names.begin(), names.end(), it->ifa_name) == names.end()) {
      names.emplace_back(it->ifa_name);
    }
    if (name != it->ifa_name) continue;
    found_name = true;
    if (it->ifa_addr == nullptr) continue;
    if (it->ifa_addr->sa_family == AF_INET) {
      fields->family = AddressFamily::kIpv4;
      std::memcpy(fields->address.data(), &reinterpret_cast<sockaddr_in*>(it->ifa_addr)->sin_addr,
                  4);
      freeifaddrs(list);
      return {};
    }
    const auto* in6 = reinterpret_cast<sockaddr_in6*>(it->ifa_addr);
    if (it->ifa_addr->sa_family == AF_INET6 && !found_v6 &&
        !IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) {
      found_v6 = true;
      v6.family = AddressFamily::kIpv6;
      std::memcpy(v6.address.data(), &in6->sin6_addr, 16);
    }
  }
  freeifaddrs(list);
  if (found_v6) {
    fields->family = v6.family;
    fields->address = v6.address;
    return {};
  }
  if (!found_name) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    return Status::error(quoted + " names no network interface (there are: " + known + ")");
  }
  return Status::error(quoted + " has no IPv4 or global IPv6 address");
}

}  // namespace

Status new_unique_id(shmem::UniqueId* out) {
  UniqueIdFields fields;
  const uint8_t loopback[4] = {127, 0, 0, 1};
  std::memcpy(fields.address.data(), loopback, sizeof(loopback));
  if (const char* ifname = std::getenv("MORI_SOCKET_IFNAME"); ifname != nullptr && *ifname != 0) {
    MORI_TRY(interface_address(ifname, &fields));
  }
  MORI_TRY(random_nonce(&fields.nonce));
  Fd listener;
  MORI_TRY(listen_on(fields, &listener, &fields.port));
  encode_unique_id(fields, out);
  std::lock_guard lock(listeners_mutex());
  listeners().push_back({fields.nonce, std::move(listener)});
  return {};
}

Fd claim_listener(uint64_t nonce) {
  std::lock_guard lock(listeners_mutex());
  auto& open = listeners();
  for (auto it = open.begin(); it != open.end(); ++it) {
    if (it->nonce == nonce) {
      Fd fd = std::move(it->fd);
      open.erase(it);
      return fd;
    }
  }
  return Fd();
}

}  // namespace mori::bootstrap
