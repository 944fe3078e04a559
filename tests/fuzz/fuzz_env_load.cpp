// Fuzzes mori::env::load (src/runtime/env.hpp) with every variable it reads set from the input.
//
// Input: the values of the variables in kVariables, in order, separated by NUL bytes; variables
// past the last value are unset (an empty value is the same as unset). load() must either succeed
// with settings inside their documented ranges, or fail with a message naming a variable and leave
// *out untouched.
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz_common.hpp"
#include "mori/state/context.hpp"
#include "runtime/env.hpp"

namespace {

constexpr std::array<const char*, 14> kVariables = {
    "MORI_SHMEM_HEAP_SIZE",
    "MORI_SHMEM_MODE",
    "MORI_SHMEM_VMM_CHUNK_SIZE",
    "MORI_NUM_QP_PER_PE",
    "MORI_SHMEM_BOOTSTRAP_TIMEOUT",
    "MORI_SHMEM_TIMEOUT_MS",
    "MORI_SHMEM_CHECK_SYMMETRY",
    "MORI_RDMA_DEVICES",
    "MORI_DEVICE_NIC",
    "MORI_SHMEM_PES_PER_NODE",
    "MORI_IB_GID_INDEX",
    "MORI_RDMA_SQ_WQES",
    "MORI_SHMEM_MAX_TEAMS",
    "MORI_SHMEM_TEAM_SCRATCH_SIZE",
};
// Indices into kVariables.
enum Var { kHeapSize = 0, kMode = 1, kChunk = 2, kSymmetry = 6, kDevices = 7, kNic = 8 };

// glibc's setenv keeps every value it was ever given; putenv on buffers of our own does not grow.
constexpr size_t kMaxValue = 1024;
std::array<std::array<char, 64 + kMaxValue>, kVariables.size()> g_entries;

void set(size_t i, std::string_view value) {
  if (value.empty()) {
    unsetenv(kVariables[i]);
    return;
  }
  char* entry = g_entries[i].data();
  const size_t name = std::strlen(kVariables[i]);
  std::memcpy(entry, kVariables[i], name);
  entry[name] = '=';
  std::memcpy(entry + name + 1, value.data(), value.size());
  entry[name + 1 + value.size()] = '\0';
  putenv(entry);
}

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kVariables.size() * kMaxValue) return -1;  // not added to the corpus
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::array<std::string_view, kVariables.size()> values{};
  for (size_t i = 0; i < kVariables.size(); ++i) {
    const size_t nul = rest.find('\0');
    values[i] = rest.substr(0, nul);
    if (values[i].size() > kMaxValue) return -1;
    set(i, values[i]);
    rest = nul == std::string_view::npos ? std::string_view{} : rest.substr(nul + 1);
  }

  mori::env::Settings out;
  out.heap_size = 12345;  // a sentinel: load() writes *out only on success
  out.num_qp_per_pe = -7;
  const mori::Status s = mori::env::load(&out);
  if (!s.ok()) {
    FUZZ_CHECK(out.heap_size == 12345 && out.num_qp_per_pe == -7);
    FUZZ_CHECK(s.message().find("MORI_") != std::string::npos);
    return 0;
  }
  // Accepted: every field within its documented range.
  FUZZ_CHECK(out.heap_size > 0);
  FUZZ_CHECK(out.vmm_chunk_size > 0);
  if (!values[kChunk].empty()) {
    const long page = sysconf(_SC_PAGESIZE);
    FUZZ_CHECK(out.vmm_chunk_size % static_cast<size_t>(page) == 0);
  }
  if (out.heap_mode == mori::heap::Mode::Vmm) {
    FUZZ_CHECK(values[kMode] == "vmm_heap");
    size_t asked = size_t{1} << 30;
    if (!values[kHeapSize].empty()) {
      FUZZ_CHECK(
          mori::env::parse_size(kVariables[kHeapSize], std::string(values[kHeapSize]), &asked)
              .ok());
    }
    // Rounded up to whole chunks, never down, by less than a chunk.
    FUZZ_CHECK(out.heap_size % out.vmm_chunk_size == 0);
    FUZZ_CHECK(out.heap_size >= asked && out.heap_size - asked < out.vmm_chunk_size);
  } else {
    FUZZ_CHECK(values[kMode].empty() || values[kMode] == "static_heap");
  }
  FUZZ_CHECK(out.num_qp_per_pe >= 1 && out.num_qp_per_pe <= mori::state::kMaxQpPerPe);
  FUZZ_CHECK(out.max_teams >= 3 && out.max_teams <= mori::env::kMaxTeamsLimit);
  FUZZ_CHECK(out.team_scratch >= mori::env::kTeamScratchMin &&
             out.team_scratch <= mori::env::kTeamScratchMax &&
             out.team_scratch % mori::env::kTeamScratchGranule == 0);
  FUZZ_CHECK(out.bootstrap_timeout.count() > 0);
  FUZZ_CHECK(out.pes_per_node >= 0 && out.pes_per_node <= (1 << 20));
  FUZZ_CHECK(out.ib_gid_index >= -1 && out.ib_gid_index <= 255);
  FUZZ_CHECK(power_of_two(out.rdma_sq_wqes) && out.rdma_sq_wqes >= 16 && out.rdma_sq_wqes <= 65536);
  FUZZ_CHECK(out.rdma_devices == values[kDevices]);
  if (!values[kSymmetry].empty()) FUZZ_CHECK(out.check_symmetry == (values[kSymmetry] == "1"));
  if (values[kNic].empty()) {
    FUZZ_CHECK(out.device_nic == mori::state::Nic::kNone);
  } else {
    FUZZ_CHECK(out.device_nic != mori::state::Nic::kNone);
  }
  return 0;
}
