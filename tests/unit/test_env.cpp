// env: the size and integer parsers with their exact error texts, and load() over the process
// environment, which every case restores as it found it.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/env.hpp"

namespace env = mori::env;

namespace {

constexpr const char* kVariables[] = {
    "MORI_SHMEM_HEAP_SIZE",
    "MORI_SHMEM_MODE",
    "MORI_SHMEM_VMM_CHUNK_SIZE",
    "MORI_NUM_QP_PER_PE",
    "MORI_SHMEM_TIMEOUT_MS",
    "MORI_SHMEM_CHECK_SYMMETRY",
    "MORI_SHMEM_BOOTSTRAP_TIMEOUT",
    "MORI_RDMA_DEVICES",
    "MORI_DEVICE_NIC",
    "MORI_RDMA_SQ_WQES",
    "MORI_IB_GID_INDEX",
    "MORI_RDMA_TC",
    "MORI_RDMA_SL",
    "MORI_RDMA_TIMEOUT",
    "MORI_RDMA_RETRY_CNT",
    "MORI_RDMA_RELAXED_ORDERING",
    "MORI_SHMEM_PES_PER_NODE",
    "MORI_BNXT_DV_LIB",
    "MORI_IONIC_DV_LIB",
    "MORI_SHMEM_MAX_TEAMS",
    "MORI_SHMEM_TEAM_SCRATCH_SIZE",
};

// Clears every variable load() reads, applies `values`, and puts the environment back as it was
// when it goes out of scope, so that cases neither see each other's settings nor ctest's.
class ScopedEnv {
 public:
  explicit ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> values) {
    for (const char* name : kVariables) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      unsetenv(name);
    }
    for (const auto& [name, value] : values) setenv(name, value, 1);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name, value->c_str(), 1);
      } else {
        unsetenv(name);
      }
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

std::string size_error(const std::string& text) {
  return "MORI_SHMEM_HEAP_SIZE=\"" + text +
         "\" is not a size: use bytes or a number with K, M, G or T (6G)";
}

env::Settings must_load() {
  env::Settings s;
  const mori::Status status = env::load(&s);
  REQUIRE_MESSAGE(status.ok(), status.message());
  return s;
}

std::string load_error() {
  env::Settings s;
  s.num_qp_per_pe = 17;  // a failed load must leave the settings alone
  const mori::Status status = env::load(&s);
  REQUIRE_FALSE(status.ok());
  CHECK(s.num_qp_per_pe == 17);
  return status.message();
}

}  // namespace

TEST_CASE("env: parse_size accepts bytes and K, M, G, T suffixes in either case") {
  const std::pair<const char*, size_t> good[] = {
      {"6G", size_t{6} << 30},
      {"512M", size_t{512} << 20},
      {"2g", size_t{2} << 30},
      {"64k", size_t{64} << 10},
      {"1T", size_t{1} << 40},
      {"1048576", 1048576},
      {"1", 1},
      {"0010", 10},
  };
  for (const auto& [text, expected] : good) {
    CAPTURE(text);
    size_t out = 0;
    const mori::Status s = env::parse_size("MORI_SHMEM_HEAP_SIZE", text, &out);
    REQUIRE_MESSAGE(s.ok(), s.message());
    CHECK(out == expected);
  }
}

TEST_CASE("env: parse_size refuses anything else, quoting the variable and the text") {
  for (const char* text : {"0", "", "6X", "G", "-1", "1.5G", "99999999999999999999G", "6GB", " 6G",
                           "6G ", "+6G", "0G", "17179869184T", "0x10"}) {
    CAPTURE(text);
    size_t out = 42;
    const mori::Status s = env::parse_size("MORI_SHMEM_HEAP_SIZE", text, &out);
    REQUIRE_FALSE(s.ok());
    CHECK(s.message() == size_error(text));
    CHECK(out == 42);
  }
  size_t out = 0;
  CHECK(env::parse_size("MORI_SHMEM_VMM_CHUNK_SIZE", "6X", &out).message() ==
        "MORI_SHMEM_VMM_CHUNK_SIZE=\"6X\" is not a size: use bytes or a number with K, M, G or T "
        "(6G)");
}

TEST_CASE("env: parse_uint takes plain decimal integers up to its maximum") {
  uint64_t out = 0;
  CHECK(env::parse_uint("X", "0", 10, &out).ok());
  CHECK(out == 0);
  CHECK(env::parse_uint("X", "10", 10, &out).ok());
  CHECK(out == 10);
  CHECK(env::parse_uint("X", "18446744073709551615", UINT64_MAX, &out).ok());
  CHECK(out == UINT64_MAX);
  CHECK(env::parse_uint("X", "11", 10, &out).message() ==
        "X=\"11\" is too large: the most accepted is 10");
  CHECK(env::parse_uint("X", "18446744073709551616", UINT64_MAX, &out).message() ==
        "X=\"18446744073709551616\" is too large: the most accepted is 18446744073709551615");
  for (const char* text : {"", "-1", "1.0", "1k", " 1", "+1"}) {
    CAPTURE(text);
    CHECK(env::parse_uint("X", text, 10, &out).message() ==
          "X=\"" + std::string(text) + "\" is not a non-negative integer");
  }
}

TEST_CASE("env: load with nothing set gives the defaults") {
  ScopedEnv scope({{"MORI_SHMEM_HEAP_SIZE", ""}, {"MORI_SHMEM_MODE", ""}});  // empty means unset
  const env::Settings s = must_load();
  CHECK(s.heap_size == size_t{1} << 30);
  CHECK(s.heap_mode == mori::heap::Mode::Static);
  CHECK(s.vmm_chunk_size == size_t{64} << 20);
  CHECK(s.num_qp_per_pe == 4);
  CHECK(s.bootstrap_timeout == std::chrono::seconds(30));
  CHECK(s.timeout_ms == 0);
  CHECK(s.max_teams == 64);
  CHECK(s.team_scratch == size_t{64} << 10);
#ifdef NDEBUG
  CHECK_FALSE(s.check_symmetry);
#else
  CHECK(s.check_symmetry);
#endif
  CHECK(s.rdma_devices.empty());
}

TEST_CASE("env: load reads every variable") {
  ScopedEnv scope({{"MORI_SHMEM_HEAP_SIZE", "6G"},
                   {"MORI_SHMEM_MODE", "vmm_heap"},
                   {"MORI_SHMEM_VMM_CHUNK_SIZE", "2M"},
                   {"MORI_NUM_QP_PER_PE", "64"},
                   {"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "5"},
                   {"MORI_SHMEM_TIMEOUT_MS", "20000"},
                   {"MORI_SHMEM_CHECK_SYMMETRY", "1"},
                   {"MORI_RDMA_DEVICES", "mlx5_0:1,^mlx5_3"}});
  const env::Settings s = must_load();
  CHECK(s.heap_size == size_t{6} << 30);
  CHECK(s.heap_mode == mori::heap::Mode::Vmm);
  CHECK(s.vmm_chunk_size == size_t{2} << 20);
  CHECK(s.num_qp_per_pe == 64);
  CHECK(s.bootstrap_timeout == std::chrono::seconds(5));
  CHECK(s.timeout_ms == 20000);
  CHECK(s.check_symmetry);
  CHECK(s.rdma_devices == "mlx5_0:1,^mlx5_3");
}

TEST_CASE("env: the RDMA variables") {
  {
    ScopedEnv scope({});
    const env::Settings s = must_load();
    CHECK(s.device_nic == mori::state::Nic::kNone);
    CHECK(s.rdma_sq_wqes == 256);
    CHECK(s.ib_gid_index == -1);
    CHECK(s.rdma_timeout == 14);
    CHECK(s.rdma_retry_cnt == 7);
    CHECK(s.pes_per_node == 0);
    CHECK(s.bnxt_dv_lib.empty());
    CHECK(s.ionic_dv_lib.empty());
  }
  ScopedEnv scope({{"MORI_DEVICE_NIC", "ionic"},
                   {"MORI_RDMA_SQ_WQES", "64"},
                   {"MORI_IB_GID_INDEX", "0"},
                   {"MORI_RDMA_TC", "104"},
                   {"MORI_RDMA_SL", "3"},
                   {"MORI_RDMA_TIMEOUT", "10"},
                   {"MORI_RDMA_RETRY_CNT", "0"},
                   {"MORI_RDMA_RELAXED_ORDERING", "1"},
                   {"MORI_SHMEM_PES_PER_NODE", "8"},
                   {"MORI_BNXT_DV_LIB", "/opt/broadcom/lib/libbnxt_re.so"},
                   {"MORI_IONIC_DV_LIB", "libionic.so.1"}});
  const env::Settings s = must_load();
  CHECK(s.device_nic == mori::state::Nic::kIonic);
  CHECK(s.rdma_sq_wqes == 64);
  CHECK(s.ib_gid_index == 0);
  CHECK(s.rdma_traffic_class == 104);
  CHECK(s.rdma_service_level == 3);
  CHECK(s.rdma_timeout == 10);
  CHECK(s.rdma_retry_cnt == 0);
  CHECK(s.rdma_relaxed_ordering);
  CHECK(s.pes_per_node == 8);
  CHECK(s.bnxt_dv_lib == "/opt/broadcom/lib/libbnxt_re.so");
  CHECK(s.ionic_dv_lib == "libionic.so.1");
}

TEST_CASE("env: a NIC family the build's device code lacks is refused, naming the build's list") {
  using mori::state::Nic;
  CHECK(env::check_nic_built(Nic::kMlx5, "mlx5").ok());
  CHECK(env::check_nic_built(Nic::kBnxt, "mlx5;bnxt;ionic").ok());
  CHECK(env::check_nic_built(Nic::kIonic, "bnxt;ionic").ok());
  CHECK(env::check_nic_built(Nic::kBnxt, "mlx5").message() ==
        "MORI_DEVICE_NIC=\"bnxt\": this build's device code carries mlx5 only (reconfigure with "
        "-DMORI_RDMA_PROVIDERS=\"mlx5;bnxt\")");
  CHECK(env::check_nic_built(Nic::kMlx5, "bnxt;ionic").message() ==
        "MORI_DEVICE_NIC=\"mlx5\": this build's device code carries bnxt;ionic only (reconfigure "
        "with -DMORI_RDMA_PROVIDERS=\"bnxt;ionic;mlx5\")");
  CHECK(env::check_nic_built(Nic::kIonic, "none").message() ==
        "MORI_DEVICE_NIC=\"ionic\": this build's device code carries no NIC family (reconfigure "
        "with -DMORI_RDMA_PROVIDERS=ionic)");
  // A name is matched whole, not as a prefix of another entry.
  CHECK_FALSE(env::check_nic_built(Nic::kMlx5, "mlx5x;bnxt").ok());
}

TEST_CASE("env: in vmm_heap mode the heap size rounds up to whole chunks, in static mode not") {
  {
    ScopedEnv scope({{"MORI_SHMEM_HEAP_SIZE", "100M"}, {"MORI_SHMEM_MODE", "vmm_heap"}});
    CHECK(must_load().heap_size == size_t{128} << 20);
  }
  {
    ScopedEnv scope({{"MORI_SHMEM_HEAP_SIZE", "5000"},
                     {"MORI_SHMEM_MODE", "vmm_heap"},
                     {"MORI_SHMEM_VMM_CHUNK_SIZE", "4096"}});
    CHECK(must_load().heap_size == 8192);
  }
  {
    ScopedEnv scope({{"MORI_SHMEM_HEAP_SIZE", "128M"}, {"MORI_SHMEM_MODE", "vmm_heap"}});
    CHECK(must_load().heap_size == size_t{128} << 20);
  }
  {
    ScopedEnv scope({{"MORI_SHMEM_HEAP_SIZE", "100M"}, {"MORI_SHMEM_MODE", "static_heap"}});
    CHECK(must_load().heap_size == size_t{100} << 20);
  }
}

TEST_CASE("env: load refuses bad values, quoting the variable and its value") {
  const long page = sysconf(_SC_PAGESIZE);
  const std::string page_text = std::to_string(page);
  const std::string not_page = std::to_string(page + 512);
  const std::vector<std::pair<std::pair<const char*, std::string>, std::string>> cases = {
      {{"MORI_SHMEM_HEAP_SIZE", "6X"}, size_error("6X")},
      {{"MORI_SHMEM_MODE", "dynamic"},
       "MORI_SHMEM_MODE=\"dynamic\" is not a heap mode: use static_heap or vmm_heap"},
      {{"MORI_SHMEM_MODE", "VMM_HEAP"},
       "MORI_SHMEM_MODE=\"VMM_HEAP\" is not a heap mode: use static_heap or vmm_heap"},
      {{"MORI_SHMEM_VMM_CHUNK_SIZE", not_page},
       "MORI_SHMEM_VMM_CHUNK_SIZE=\"" + not_page + "\" is not a multiple of the page size (" +
           page_text + ")"},
      {{"MORI_NUM_QP_PER_PE", "0"},
       "MORI_NUM_QP_PER_PE=\"0\" is too small: the least accepted is 1"},
      {{"MORI_NUM_QP_PER_PE", "257"},
       "MORI_NUM_QP_PER_PE=\"257\" is too large: the most accepted is 256"},
      {{"MORI_NUM_QP_PER_PE", "four"}, "MORI_NUM_QP_PER_PE=\"four\" is not a non-negative integer"},
      {{"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "0"},
       "MORI_SHMEM_BOOTSTRAP_TIMEOUT=\"0\" is too small: the least accepted is 1"},
      {{"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "30s"},
       "MORI_SHMEM_BOOTSTRAP_TIMEOUT=\"30s\" is not a non-negative integer"},
      {{"MORI_SHMEM_TIMEOUT_MS", "-1"},
       "MORI_SHMEM_TIMEOUT_MS=\"-1\" is not a non-negative integer"},
      {{"MORI_SHMEM_CHECK_SYMMETRY", "yes"}, "MORI_SHMEM_CHECK_SYMMETRY=\"yes\" is not 0 or 1"},
      {{"MORI_DEVICE_NIC", "cx7"}, "MORI_DEVICE_NIC=\"cx7\" is not mlx5, bnxt or ionic"},
      {{"MORI_DEVICE_NIC", "MLX5"}, "MORI_DEVICE_NIC=\"MLX5\" is not mlx5, bnxt or ionic"},
      {{"MORI_RDMA_SQ_WQES", "100"}, "MORI_RDMA_SQ_WQES=\"100\" is not a power of two"},
      {{"MORI_RDMA_SQ_WQES", "8"},
       "MORI_RDMA_SQ_WQES=\"8\" is too small: the least accepted is 16"},
      {{"MORI_RDMA_SQ_WQES", "131072"},
       "MORI_RDMA_SQ_WQES=\"131072\" is too large: the most accepted is 65536"},
      {{"MORI_IB_GID_INDEX", "256"},
       "MORI_IB_GID_INDEX=\"256\" is too large: the most accepted is 255"},
      {{"MORI_RDMA_TC", "256"}, "MORI_RDMA_TC=\"256\" is too large: the most accepted is 255"},
      {{"MORI_RDMA_SL", "16"}, "MORI_RDMA_SL=\"16\" is too large: the most accepted is 15"},
      {{"MORI_RDMA_TIMEOUT", "32"},
       "MORI_RDMA_TIMEOUT=\"32\" is too large: the most accepted is 31"},
      {{"MORI_RDMA_RETRY_CNT", "8"},
       "MORI_RDMA_RETRY_CNT=\"8\" is too large: the most accepted is 7"},
      {{"MORI_RDMA_RELAXED_ORDERING", "on"}, "MORI_RDMA_RELAXED_ORDERING=\"on\" is not 0 or 1"},
      {{"MORI_SHMEM_PES_PER_NODE", "0"},
       "MORI_SHMEM_PES_PER_NODE=\"0\" is too small: the least accepted is 1"},
  };
  for (const auto& [setting, expected] : cases) {
    CAPTURE(setting.first);
    CAPTURE(setting.second);
    ScopedEnv scope({{setting.first, setting.second.c_str()}});
    CHECK(load_error() == expected);
  }
}

// Every numeric limit load() applies, exactly at the limit (accepted, with the value it gives) and
// one past it (refused with the exact text).
TEST_CASE("env: each limit is accepted exactly and refused one past it") {
  struct Accepted {
    const char* variable;
    const char* text;
    uint64_t value;
  };
  auto value_of = [](const env::Settings& s, const std::string& variable) -> uint64_t {
    if (variable == "MORI_SHMEM_HEAP_SIZE") return s.heap_size;
    if (variable == "MORI_NUM_QP_PER_PE") return static_cast<uint64_t>(s.num_qp_per_pe);
    if (variable == "MORI_SHMEM_BOOTSTRAP_TIMEOUT")
      return static_cast<uint64_t>(s.bootstrap_timeout.count());
    if (variable == "MORI_SHMEM_TIMEOUT_MS") return s.timeout_ms;
    if (variable == "MORI_SHMEM_PES_PER_NODE") return static_cast<uint64_t>(s.pes_per_node);
    if (variable == "MORI_IB_GID_INDEX") return static_cast<uint64_t>(s.ib_gid_index);
    if (variable == "MORI_RDMA_TC") return static_cast<uint64_t>(s.rdma_traffic_class);
    if (variable == "MORI_RDMA_SL") return static_cast<uint64_t>(s.rdma_service_level);
    if (variable == "MORI_RDMA_SQ_WQES") return s.rdma_sq_wqes;
    if (variable == "MORI_SHMEM_MAX_TEAMS") return static_cast<uint64_t>(s.max_teams);
    if (variable == "MORI_SHMEM_TEAM_SCRATCH_SIZE") return s.team_scratch;
    FAIL("no field for " << variable);
    return 0;
  };
  const Accepted accepted[] = {
      {"MORI_SHMEM_HEAP_SIZE", "18446744073709551615", UINT64_MAX},
      {"MORI_SHMEM_HEAP_SIZE", "18014398509481983K", ((uint64_t{1} << 54) - 1) << 10},
      {"MORI_SHMEM_HEAP_SIZE", "17592186044415M", ((uint64_t{1} << 44) - 1) << 20},
      {"MORI_SHMEM_HEAP_SIZE", "17179869183G", ((uint64_t{1} << 34) - 1) << 30},
      {"MORI_SHMEM_HEAP_SIZE", "16777215T", ((uint64_t{1} << 24) - 1) << 40},
      {"MORI_NUM_QP_PER_PE", "1", 1},
      {"MORI_NUM_QP_PER_PE", "256", 256},
      {"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "1", 1000},
      {"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "9223372036854775", 9223372036854775000ull},
      {"MORI_SHMEM_TIMEOUT_MS", "0", 0},
      {"MORI_SHMEM_TIMEOUT_MS", "18446744073709551615", UINT64_MAX},
      {"MORI_SHMEM_PES_PER_NODE", "1", 1},
      {"MORI_SHMEM_PES_PER_NODE", "1048576", 1048576},
      {"MORI_IB_GID_INDEX", "0", 0},
      {"MORI_IB_GID_INDEX", "255", 255},
      {"MORI_RDMA_TC", "255", 255},
      {"MORI_RDMA_SL", "15", 15},
      {"MORI_RDMA_SQ_WQES", "16", 16},
      {"MORI_RDMA_SQ_WQES", "65536", 65536},
      {"MORI_SHMEM_MAX_TEAMS", "3", 3},
      {"MORI_SHMEM_MAX_TEAMS", "3264", 3264},
      {"MORI_SHMEM_TEAM_SCRATCH_SIZE", "4K", 4096},
      {"MORI_SHMEM_TEAM_SCRATCH_SIZE", "4352", 4352},
      {"MORI_SHMEM_TEAM_SCRATCH_SIZE", "64M", uint64_t{64} << 20},
  };
  for (const auto& [variable, text, value] : accepted) {
    CAPTURE(variable);
    CAPTURE(text);
    ScopedEnv scope({{variable, text}});
    CHECK(value_of(must_load(), variable) == value);
  }
  const std::pair<std::pair<const char*, const char*>, std::string> refused[] = {
      {{"MORI_SHMEM_HEAP_SIZE", "18446744073709551616"}, size_error("18446744073709551616")},
      {{"MORI_SHMEM_HEAP_SIZE", "18014398509481984K"}, size_error("18014398509481984K")},
      {{"MORI_SHMEM_HEAP_SIZE", "17592186044416M"}, size_error("17592186044416M")},
      {{"MORI_SHMEM_HEAP_SIZE", "17179869184G"}, size_error("17179869184G")},
      {{"MORI_SHMEM_HEAP_SIZE", "16777216T"}, size_error("16777216T")},
      {{"MORI_SHMEM_BOOTSTRAP_TIMEOUT", "9223372036854776"},
       "MORI_SHMEM_BOOTSTRAP_TIMEOUT=\"9223372036854776\" is too large: the most accepted is "
       "9223372036854775"},
      {{"MORI_SHMEM_TIMEOUT_MS", "18446744073709551616"},
       "MORI_SHMEM_TIMEOUT_MS=\"18446744073709551616\" is too large: the most accepted is "
       "18446744073709551615"},
      {{"MORI_SHMEM_PES_PER_NODE", "1048577"},
       "MORI_SHMEM_PES_PER_NODE=\"1048577\" is too large: the most accepted is 1048576"},
      {{"MORI_RDMA_SQ_WQES", "15"},
       "MORI_RDMA_SQ_WQES=\"15\" is too small: the least accepted is 16"},
      {{"MORI_RDMA_SQ_WQES", "65537"},
       "MORI_RDMA_SQ_WQES=\"65537\" is too large: the most accepted is 65536"},
      {{"MORI_SHMEM_MAX_TEAMS", "2"},
       "MORI_SHMEM_MAX_TEAMS=\"2\" is too small: the least accepted is 3"},
      {{"MORI_SHMEM_MAX_TEAMS", "3265"},
       "MORI_SHMEM_MAX_TEAMS=\"3265\" is too large: the most accepted is 3264"},
      {{"MORI_SHMEM_TEAM_SCRATCH_SIZE", "4000"},
       "MORI_SHMEM_TEAM_SCRATCH_SIZE=\"4000\" is not a multiple of 256 bytes from 4096 to "
       "67108864"},
      {{"MORI_SHMEM_TEAM_SCRATCH_SIZE", "4100"},
       "MORI_SHMEM_TEAM_SCRATCH_SIZE=\"4100\" is not a multiple of 256 bytes from 4096 to "
       "67108864"},
      {{"MORI_SHMEM_TEAM_SCRATCH_SIZE", "65M"},
       "MORI_SHMEM_TEAM_SCRATCH_SIZE=\"65M\" is not a multiple of 256 bytes from 4096 to 67108864"},
  };
  for (const auto& [setting, expected] : refused) {
    CAPTURE(setting.first);
    CAPTURE(setting.second);
    ScopedEnv scope({setting});
    CHECK(load_error() == expected);
  }
}

TEST_CASE("env: VMM chunks are whole pages, and the rounded-up heap must fit 64 bits") {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const std::string page_text = std::to_string(page);
  for (const uint64_t chunk : {page, 2 * page}) {
    const std::string chunk_text = std::to_string(chunk);
    ScopedEnv scope({{"MORI_SHMEM_VMM_CHUNK_SIZE", chunk_text.c_str()}});
    CHECK(must_load().vmm_chunk_size == chunk);
  }
  for (const uint64_t chunk : {page - 1, page + 1}) {
    const std::string chunk_text = std::to_string(chunk);
    ScopedEnv scope({{"MORI_SHMEM_VMM_CHUNK_SIZE", chunk_text.c_str()}});
    CHECK(load_error() == "MORI_SHMEM_VMM_CHUNK_SIZE=\"" + chunk_text +
                              "\" is not a multiple of the page size (" + page_text + ")");
  }
  // With page-sized chunks the largest heap that rounds up without overflow is 2^64 - page.
  const std::string fits = std::to_string(0 - page), over = std::to_string(0 - page + 1);
  {
    ScopedEnv scope({{"MORI_SHMEM_MODE", "vmm_heap"},
                     {"MORI_SHMEM_VMM_CHUNK_SIZE", page_text.c_str()},
                     {"MORI_SHMEM_HEAP_SIZE", fits.c_str()}});
    CHECK(must_load().heap_size == 0 - page);
  }
  ScopedEnv scope({{"MORI_SHMEM_MODE", "vmm_heap"},
                   {"MORI_SHMEM_VMM_CHUNK_SIZE", page_text.c_str()},
                   {"MORI_SHMEM_HEAP_SIZE", over.c_str()}});
  CHECK(load_error() == "MORI_SHMEM_HEAP_SIZE of " + over +
                            " bytes overflows when rounded up to whole " + page_text +
                            "-byte VMM chunks");
}
