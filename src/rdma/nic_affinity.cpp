// Choosing the RDMA device nearest a GPU in the PCI tree (nic_affinity.hpp).
#include "rdma/nic_affinity.hpp"

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mori::rdma {
namespace {

// `text` as a hex number of 1 to `max_digits` digits, at most `max_value`.
bool parse_hex(std::string_view text, size_t max_digits, unsigned long max_value,
               unsigned long* out) {
  if (text.empty() || text.size() > max_digits) return false;
  unsigned long value = 0;
  for (char c : text) {
    int digit = 0;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else {
      return false;
    }
    value = value * 16 + digit;
  }
  if (value > max_value) return false;
  *out = value;
  return true;
}

// The canonical path of `path` (every symlink resolved), split at '/'. On failure *why says so.
bool resolve(const std::string& path, std::vector<std::string>* components, std::string* why) {
  char real[PATH_MAX];
  if (!realpath(path.c_str(), real)) {
    *why = "cannot resolve " + path + " (" + std::strerror(errno) + ")";
    return false;
  }
  components->clear();
  std::string_view rest(real);
  while (!rest.empty()) {
    const size_t slash = rest.find('/');
    if (slash != 0) components->emplace_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return true;
}

// The components of `a` and `b` that the two do not share: 0 for one device, 2 for two functions
// of one bridge, more for each bridge between them.
size_t distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  return a.size() + b.size() - 2 * common;
}

}  // namespace

std::string normalize_pci_address(std::string_view address) {
  // [domain:]bus:device.function, as the kernel prints it: "%04x:%02x:%02x.%d".
  const size_t dot = address.rfind('.');
  if (dot == std::string_view::npos) return "";
  const std::string_view head = address.substr(0, dot);
  const size_t last = head.rfind(':');
  if (last == std::string_view::npos) return "";
  const size_t first = head.find(':');
  unsigned long domain = 0, bus = 0, device = 0, function = 0;
  if (first != last && !parse_hex(head.substr(0, first), 8, 0xffffffff, &domain)) return "";
  const std::string_view bus_text =
      first == last ? head.substr(0, last) : head.substr(first + 1, last - first - 1);
  if (!parse_hex(bus_text, 2, 0xff, &bus) || !parse_hex(head.substr(last + 1), 2, 0x1f, &device) ||
      !parse_hex(address.substr(dot + 1), 1, 7, &function))
    return "";
  char text[32];
  std::snprintf(text, sizeof text, "%04lx:%02lx:%02lx.%lx", domain, bus, device, function);
  return text;
}

NicChoice choose_nic(const std::string& sysfs_root, const std::string& gpu_pci_address,
                     const std::vector<std::string>& names, int local_rank) {
  const size_t n = names.size();
  const size_t rank = static_cast<size_t>(local_rank < 0 ? 0 : local_rank);
  NicChoice choice;
  auto fallback = [&](const std::string& why) {
    choice.index = rank % n;
    choice.reason = why + "; using local_rank % " + std::to_string(n);
    return choice;
  };
  if (n == 1) {
    choice.reason = names[0] + " is the only device selected";
    return choice;
  }
  if (gpu_pci_address.empty()) return fallback("the GPU's PCI address is unknown");
  const std::string gpu = normalize_pci_address(gpu_pci_address);
  if (gpu.empty())
    return fallback("the GPU's PCI address \"" + gpu_pci_address +
                    "\" is not [domain:]bus:device.function");
  std::vector<std::string> gpu_path, nic_path;
  std::string why;
  if (!resolve(sysfs_root + "/bus/pci/devices/" + gpu, &gpu_path, &why)) return fallback(why);
  std::vector<size_t> distances;
  for (const std::string& name : names) {
    if (!resolve(sysfs_root + "/class/infiniband/" + name + "/device", &nic_path, &why))
      return fallback(why);
    distances.push_back(distance(gpu_path, nic_path));
  }
  size_t nearest = SIZE_MAX;
  for (size_t d : distances) nearest = d < nearest ? d : nearest;
  std::vector<size_t> candidates;
  for (size_t i = 0; i < n; ++i)
    if (distances[i] == nearest) candidates.push_back(i);
  choice.index = candidates[rank % candidates.size()];
  choice.by_topology = true;
  choice.reason = names[choice.index] + " is nearest to GPU " + gpu + " (distance " +
                  std::to_string(nearest) + ", " + std::to_string(candidates.size()) + " of " +
                  std::to_string(n) + " devices that near)";
  return choice;
}

}  // namespace mori::rdma
