// The runtime's environment variables. Every parse is strict (no sign, no space, no fraction, no
// trailing text): a value we half-understood would configure a job differently from what its
// author meant, and the error that quotes it costs one line.
#include "runtime/env.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "mori/transport/nic_families.hpp"

namespace mori::env {
namespace {

std::string quoted(const char* variable, const std::string& text) {
  return std::string(variable) + "=\"" + text + "\"";
}

// The decimal number in text[0, end), or false if it is empty, not all digits, or overflows.
bool parse_digits(const std::string& text, size_t end, uint64_t* out) {
  if (end == 0) return false;
  uint64_t value = 0;
  for (size_t i = 0; i < end; ++i) {
    const char c = text[i];
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    value = value * 10 + digit;
  }
  *out = value;
  return true;
}

bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

// The variable's value, or false when it is unset or empty (both keep the default).
bool read(const char* variable, std::string* out) {
  const char* value = std::getenv(variable);
  if (!value || !*value) return false;
  *out = value;
  return true;
}

Status parse_at_least(const char* variable, const std::string& text, uint64_t min, uint64_t max,
                      uint64_t* out) {
  uint64_t value = 0;
  MORI_TRY(parse_uint(variable, text, max, &value));
  if (value < min) {
    return Status::error(quoted(variable, text) + " is too small: the least accepted is " +
                         std::to_string(min));
  }
  *out = value;
  return {};
}

Status parse_mode(const char* variable, const std::string& text, heap::Mode* out) {
  if (text == "static_heap") {
    *out = heap::Mode::Static;
  } else if (text == "vmm_heap") {
    *out = heap::Mode::Vmm;
  } else {
    return Status::error(quoted(variable, text) +
                         " is not a heap mode: use static_heap or vmm_heap");
  }
  return {};
}

}  // namespace

Status check_nic_built(state::Nic nic, std::string_view providers) {
  const std::string_view name = state::nic_name(nic);
  for (std::string_view rest = providers; !rest.empty();) {
    const size_t end = std::min(rest.find(';'), rest.size());
    if (rest.substr(0, end) == name) return {};
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
  const std::string list(providers);
  if (providers == "none") {
    return Status::error("MORI_DEVICE_NIC=\"" + std::string(name) +
                         "\": this build's device code carries no NIC family (reconfigure with "
                         "-DMORI_RDMA_PROVIDERS=" +
                         std::string(name) + ")");
  }
  return Status::error(
      "MORI_DEVICE_NIC=\"" + std::string(name) + "\": this build's device code carries " + list +
      " only (reconfigure with -DMORI_RDMA_PROVIDERS=\"" + list + ";" + std::string(name) + "\")");
}

Status parse_size(const char* variable, const std::string& text, size_t* out) {
  // The suffix's position in "KMGT" gives its power of 1024.
  constexpr std::string_view kSuffixes = "KMGT";
  const size_t suffix = text.empty() ? std::string_view::npos
                                     : kSuffixes.find(static_cast<char>(
                                           std::toupper(static_cast<unsigned char>(text.back()))));
  const unsigned shift = suffix == std::string_view::npos ? 0 : 10 * (suffix + 1);
  const size_t digits = shift ? text.size() - 1 : text.size();
  uint64_t value = 0;
  if (!parse_digits(text, digits, &value) || value == 0 ||
      value > (std::numeric_limits<size_t>::max() >> shift)) {
    return Status::error(quoted(variable, text) +
                         " is not a size: use bytes or a number with K, M, G or T (6G)");
  }
  *out = static_cast<size_t>(value) << shift;
  return {};
}

Status parse_uint(const char* variable, const std::string& text, uint64_t max, uint64_t* out) {
  if (!all_digits(text))
    return Status::error(quoted(variable, text) + " is not a non-negative integer");
  uint64_t value = 0;
  if (!parse_digits(text, text.size(), &value) || value > max) {
    return Status::error(quoted(variable, text) + " is too large: the most accepted is " +
                         std::to_string(max));
  }
  *out = value;
  return {};
}

Status parse_bool(const char* variable, const std::string& text, bool* out) {
  if (text != "0" && text != "1") return Status::error(quoted(variable, text) + " is not 0 or 1");
  *out = text == "1";
  return {};
}

// Starts from the defaults of Settings and writes *out only when every variable parsed, so a bad
// variable leaves the caller's settings as they were.
//
// In vmm_heap mode the heap is backed chunk by chunk, so its size is rounded UP to a whole number
// of chunks (MORI_SHMEM_HEAP_SIZE=100M with 64M chunks gives a 128M heap); never down, which
// could make an allocation that fits the size the user asked for fail.
Status load(Settings* out) {
  Settings s;
#ifdef NDEBUG
  s.check_symmetry = false;
#else
  s.check_symmetry = true;
#endif
  std::string text;
  uint64_t value = 0;
  if (read("MORI_SHMEM_HEAP_SIZE", &text))
    MORI_TRY(parse_size("MORI_SHMEM_HEAP_SIZE", text, &s.heap_size));
  if (read("MORI_SHMEM_MODE", &text)) MORI_TRY(parse_mode("MORI_SHMEM_MODE", text, &s.heap_mode));
  if (read("MORI_SHMEM_VMM_CHUNK_SIZE", &text)) {
    MORI_TRY(parse_size("MORI_SHMEM_VMM_CHUNK_SIZE", text, &s.vmm_chunk_size));
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0 && s.vmm_chunk_size % static_cast<size_t>(page) != 0) {
      return Status::error(quoted("MORI_SHMEM_VMM_CHUNK_SIZE", text) +
                           " is not a multiple of the page size (" + std::to_string(page) + ")");
    }
  }
  if (s.heap_mode == heap::Mode::Vmm) {
    const size_t chunk = s.vmm_chunk_size;
    const size_t chunks = s.heap_size / chunk + (s.heap_size % chunk != 0);
    if (chunks > std::numeric_limits<size_t>::max() / chunk) {
      return Status::error("MORI_SHMEM_HEAP_SIZE of " + std::to_string(s.heap_size) +
                           " bytes overflows when rounded up to whole " + std::to_string(chunk) +
                           "-byte VMM chunks");
    }
    s.heap_size = chunks * chunk;
  }
  if (read("MORI_NUM_QP_PER_PE", &text)) {
    MORI_TRY(parse_at_least("MORI_NUM_QP_PER_PE", text, 1, state::kMaxQpPerPe, &value));
    s.num_qp_per_pe = static_cast<int>(value);
  }
  if (read("MORI_SHMEM_BOOTSTRAP_TIMEOUT", &text)) {
    // Bounded so that the timeout in milliseconds still fits its 64-bit count.
    constexpr uint64_t kMaxSeconds = std::numeric_limits<int64_t>::max() / 1000;
    MORI_TRY(parse_at_least("MORI_SHMEM_BOOTSTRAP_TIMEOUT", text, 1, kMaxSeconds, &value));
    s.bootstrap_timeout = std::chrono::milliseconds(static_cast<int64_t>(value) * 1000);
  }
  if (read("MORI_SHMEM_TIMEOUT_MS", &text)) {
    MORI_TRY(parse_uint("MORI_SHMEM_TIMEOUT_MS", text, std::numeric_limits<uint64_t>::max(),
                        &s.timeout_ms));
  }
  if (read("MORI_SHMEM_CHECK_SYMMETRY", &text))
    MORI_TRY(parse_bool("MORI_SHMEM_CHECK_SYMMETRY", text, &s.check_symmetry));
  if (read("MORI_RDMA_DEVICES", &text)) s.rdma_devices = text;
  if (read("MORI_DEVICE_NIC", &text)) {
    if (text == "mlx5") {
      s.device_nic = state::Nic::kMlx5;
    } else if (text == "bnxt") {
      s.device_nic = state::Nic::kBnxt;
    } else if (text == "ionic") {
      s.device_nic = state::Nic::kIonic;
    } else {
      return Status::error(quoted("MORI_DEVICE_NIC", text) + " is not mlx5, bnxt or ionic");
    }
    MORI_TRY(check_nic_built(s.device_nic, transport::compiled_rdma_providers()));
  }
  if (read("MORI_BNXT_DV_LIB", &text)) s.bnxt_dv_lib = text;
  if (read("MORI_IONIC_DV_LIB", &text)) s.ionic_dv_lib = text;
  if (read("MORI_SHMEM_PES_PER_NODE", &text)) {
    MORI_TRY(parse_at_least("MORI_SHMEM_PES_PER_NODE", text, 1, 1 << 20, &value));
    s.pes_per_node = static_cast<int>(value);
  }
  if (read("MORI_IB_GID_INDEX", &text)) {
    MORI_TRY(parse_uint("MORI_IB_GID_INDEX", text, 255, &value));
    s.ib_gid_index = static_cast<int>(value);
  }
  if (read("MORI_RDMA_TC", &text)) {
    MORI_TRY(parse_uint("MORI_RDMA_TC", text, 255, &value));
    s.rdma_traffic_class = static_cast<int>(value);
  }
  if (read("MORI_RDMA_TIMEOUT", &text)) {
    MORI_TRY(parse_uint("MORI_RDMA_TIMEOUT", text, 31, &value));
    s.rdma_timeout = static_cast<int>(value);
  }
  if (read("MORI_RDMA_RETRY_CNT", &text)) {
    MORI_TRY(parse_uint("MORI_RDMA_RETRY_CNT", text, 7, &value));
    s.rdma_retry_cnt = static_cast<int>(value);
  }
  if (read("MORI_RDMA_SL", &text)) {
    MORI_TRY(parse_uint("MORI_RDMA_SL", text, 15, &value));
    s.rdma_service_level = static_cast<int>(value);
  }
  if (read("MORI_RDMA_RELAXED_ORDERING", &text))
    MORI_TRY(parse_bool("MORI_RDMA_RELAXED_ORDERING", text, &s.rdma_relaxed_ordering));
  if (read("MORI_RDMA_SQ_WQES", &text)) {
    MORI_TRY(parse_at_least("MORI_RDMA_SQ_WQES", text, 16, 65536, &value));
    if (value & (value - 1))
      return Status::error(quoted("MORI_RDMA_SQ_WQES", text) + " is not a power of two");
    s.rdma_sq_wqes = static_cast<uint32_t>(value);
  }
  if (read("MORI_SHMEM_MAX_TEAMS", &text)) {
    MORI_TRY(parse_at_least("MORI_SHMEM_MAX_TEAMS", text, state::kPredefinedTeams, kMaxTeamsLimit,
                            &value));
    s.max_teams = static_cast<int>(value);
  }
  if (read("MORI_SHMEM_TEAM_SCRATCH_SIZE", &text)) {
    MORI_TRY(parse_size("MORI_SHMEM_TEAM_SCRATCH_SIZE", text, &s.team_scratch));
    if (s.team_scratch < kTeamScratchMin || s.team_scratch > kTeamScratchMax ||
        s.team_scratch % kTeamScratchGranule != 0)
      return Status::error(quoted("MORI_SHMEM_TEAM_SCRATCH_SIZE", text) + " is not a multiple of " +
                           std::to_string(kTeamScratchGranule) + " bytes from " +
                           std::to_string(kTeamScratchMin) + " to " +
                           std::to_string(kTeamScratchMax));
  }
  *out = std::move(s);
  return {};
}

}  // namespace mori::env
