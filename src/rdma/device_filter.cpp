// MORI_RDMA_DEVICES parsing and device selection (device_filter.hpp).
#include "rdma/device_filter.hpp"

#include <algorithm>
#include <cctype>

namespace mori::rdma {
namespace {

constexpr const char* kPrefix = "MORI_RDMA_DEVICES: ";

Status item_error(std::string_view item, const char* what) {
  return Status::error(std::string(kPrefix) + "\"" + std::string(item) + "\" " + what);
}

// "1".."255": a port number as ibv_query_port takes it (uint8_t, port 0 does not exist).
bool parse_port(std::string_view text, int* out) {
  if (text.empty() || text.size() > 3) return false;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > 255) return false;
  *out = value;
  return true;
}

std::string join_names(const std::vector<std::string>& names) {
  if (names.empty()) return "no RDMA devices";
  std::string out = "devices: ";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

}  // namespace

Status parse_device_filter(std::string_view text, DeviceFilter* out) {
  DeviceFilter f;
  f.text = std::string(text);
  if (text.empty()) {
    *out = std::move(f);
    return {};
  }
  std::string_view list = text;
  f.mode = DeviceFilter::Mode::kInclude;
  if (list.front() == '^') {
    f.mode = DeviceFilter::Mode::kExclude;
    list.remove_prefix(1);
    if (list.empty())
      return item_error(text, "excludes nothing: name the devices after the caret (^mlx5_2)");
  }
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string_view item = list.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty())
      return Status::error(std::string(kPrefix) + "empty item in \"" + std::string(text) + "\"");
    if (std::any_of(item.begin(), item.end(),
                    [](char c) { return std::isspace(static_cast<unsigned char>(c)); }))
      return item_error(item, "contains whitespace");
    if (item.front() == '^')
      return item_error(item,
                        "has a caret inside the list: a caret may only start the list, "
                        "where it excludes every device named");
    DeviceFilter::Entry e;
    const size_t colon = item.find(':');
    e.name = std::string(item.substr(0, colon));
    if (e.name.empty()) return item_error(item, "has no device name");
    if (colon != std::string_view::npos) {
      if (f.mode == DeviceFilter::Mode::kExclude)
        return item_error(item, "has a port: an exclude list names devices without ports");
      if (!parse_port(item.substr(colon + 1), &e.port))
        return item_error(item, "has a bad port: use a number from 1 to 255");
    }
    for (const DeviceFilter::Entry& seen : f.entries)
      if (seen.name == e.name) return item_error(e.name, "is named twice");
    f.entries.push_back(std::move(e));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  *out = std::move(f);
  return {};
}

Status select_devices(const std::vector<std::string>& available, const DeviceFilter& filter,
                      std::vector<SelectedDevice>* out) {
  auto find = [&](const std::string& name) {
    return std::find_if(filter.entries.begin(), filter.entries.end(),
                        [&](const DeviceFilter::Entry& e) { return e.name == name; });
  };
  if (filter.mode == DeviceFilter::Mode::kInclude) {
    for (const DeviceFilter::Entry& e : filter.entries)
      if (std::find(available.begin(), available.end(), e.name) == available.end())
        return Status::error("MORI_RDMA_DEVICES names " + e.name + ", which does not exist (" +
                             join_names(available) + ")");
  }
  std::vector<SelectedDevice> kept;
  for (const std::string& name : available) {
    const auto it = find(name);
    switch (filter.mode) {
      case DeviceFilter::Mode::kAll:
        kept.push_back({name, 1});
        break;
      case DeviceFilter::Mode::kInclude:
        if (it != filter.entries.end()) kept.push_back({name, it->port});
        break;
      case DeviceFilter::Mode::kExclude:
        if (it == filter.entries.end()) kept.push_back({name, 1});
        break;
    }
  }
  if (kept.empty() && !available.empty())
    return Status::error("MORI_RDMA_DEVICES=\"" + filter.text + "\" excludes every device (" +
                         join_names(available) + ")");
  *out = std::move(kept);
  return {};
}

}  // namespace mori::rdma
