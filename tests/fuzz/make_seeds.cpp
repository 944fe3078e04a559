// Writes the fuzzers' seed inputs (docs/fuzzing.md, "Corpora"): valid messages made by mori's own
// writers (encode_unique_id, encode_hello / encode_frame, each provider's post_* and
// ring_doorbell) and a few near misses, one file per input, in <dir>/<fuzzer>/. The checked-in
// corpora are these seeds merged (libFuzzer -merge=1) with what the fuzzers found.
//
//   mori_fuzz_seeds <dir>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/unique_id.hpp"
#include "bootstrap/wire.hpp"
#include "mori/provider/bnxt.hpp"
#include "mori/provider/ionic.hpp"
#include "mori/provider/mlx5.hpp"

namespace {

namespace bs = mori::bootstrap;
using mori::provider::Opcode;
using mori::provider::WorkRequest;
using Bytes = std::vector<uint8_t>;

std::filesystem::path g_root;

void write_seed(const std::string& fuzzer, const std::string& name, const Bytes& bytes) {
  const std::filesystem::path dir = g_root / fuzzer;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

template <typename T>
void put(Bytes& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}
void put(Bytes& out, std::string_view text) { out.insert(out.end(), text.begin(), text.end()); }
void put(Bytes& out, const uint8_t* bytes, size_t n) { out.insert(out.end(), bytes, bytes + n); }

// ---- environment values -------------------------------------------------------------------------

void env_seeds() {
  int n = 0;
  for (const char* text :
       {"6G", "512M", "2g", "64k", "1T", "1048576", "0", "6X", "1.5G", "17179869184G"}) {
    Bytes b{0};
    put(b, uint64_t{0});
    put(b, std::string_view(text));
    write_seed("fuzz_env_parse", "size_" + std::to_string(n++), b);
  }
  for (auto [text, max] : {std::pair{"64", 64}, {"65", 64}, {"-1", 1000}, {"007", 255}}) {
    Bytes b{1};
    put(b, uint64_t(max));
    put(b, std::string_view(text));
    write_seed("fuzz_env_parse", "uint_" + std::to_string(n++), b);
  }
  using namespace std::string_view_literals;
  const std::string_view loads[] = {
      "1G\0static_heap\0\0"
      "4\0"
      "30\0"
      "0\0"
      "1\0"
      "mlx5_0:1,mlx5_1\0"
      "mlx5\0"
      "2\0"
      "3\0"
      "256"sv,
      "100M\0vmm_heap\0"
      "64M\0"
      "64\0"
      "1\0"
      "5000\0"
      "0\0\0"
      "ionic\0\0"
      "255\0"
      "65536"sv,
      "16E\0vmm_heap\0"
      "4097"sv,
      "\0\0\0"
      "0\0"
      "9223372036854776\0\0"
      "2\0\0"
      "bnxt\0"
      "0\0"
      "256\0"
      "100"sv,
  };
  for (const std::string_view text : loads) {
    Bytes b;
    put(b, text);
    write_seed("fuzz_env_load", "load_" + std::to_string(n++), b);
  }
}

// ---- unique ID ----------------------------------------------------------------------------------

void unique_id_seeds() {
  bs::UniqueIdFields v4;
  v4.family = bs::AddressFamily::kIpv4;
  v4.address = {127, 0, 0, 1};
  v4.port = 4242;
  v4.nonce = 0x0123456789abcdefull;
  bs::UniqueIdFields v6 = v4;
  v6.family = bs::AddressFamily::kIpv6;
  v6.address = {};
  v6.address[15] = 1;
  v6.port = 65535;
  int n = 0;
  for (const bs::UniqueIdFields& fields : {v4, v6}) {
    mori::shmem::UniqueId id;
    bs::encode_unique_id(fields, &id);
    for (const uint8_t mode : {0, 1}) {
      Bytes b{mode};
      put(b, id.bytes, sizeof(id.bytes));
      put(b, uint16_t(n * 37 + 5));
      write_seed("fuzz_unique_id", "id_" + std::to_string(n++), b);
    }
    // Sealed, but with a field no decoder accepts: another version, family 5, port 0.
    for (const auto& [offset, value] : {std::pair{4, 2}, {6, 5}, {8, 0}}) {
      mori::shmem::UniqueId bad = id;
      bad.bytes[offset] = static_cast<uint8_t>(value);
      bad.bytes[offset + 1] = 0;
      Bytes b{1};
      put(b, bad.bytes, sizeof(bad.bytes));
      write_seed("fuzz_unique_id", "bad_" + std::to_string(n++), b);
    }
  }
}

// ---- bootstrap wire -----------------------------------------------------------------------------

void wire_seeds() {
  int n = 0;
  uint8_t bytes[bs::kFrameBytes] = {};
  bs::encode_hello({bs::kHelloMagic, bs::kWireVersion, 3, 4, 0x1122334455667788ull}, bytes);
  write_seed("fuzz_wire", "hello", [&] {
    Bytes b{0};
    put(b, bytes, bs::kHelloBytes);
    return b;
  }());
  const bs::Frame frames[] = {
      {static_cast<uint16_t>(bs::Op::kAllgather), 3, 16, 0, 16},
      {static_cast<uint16_t>(bs::Op::kBroadcast), 7, 8, 2, 8},
      {static_cast<uint16_t>(bs::Op::kBarrier), 1, 0, 0, 0},
      {static_cast<uint16_t>(bs::Op::kJoin), 0, 0, 0, 0},
  };
  for (const bs::Frame& frame : frames) {
    bs::encode_frame(frame, bytes);
    Bytes codec{0};
    put(codec, bytes, sizeof(bytes));
    write_seed("fuzz_wire", "frame_" + std::to_string(n++), codec);
    // Each receiver, sent exactly what it expects, then a frame that differs in one field.
    for (const uint8_t mode : {1, 2}) {
      for (const int variant : {0, 1, 2}) {
        Bytes b{mode};
        put(b, frame.op);
        put(b, frame.seq);
        put(b, frame.block);
        put(b, frame.root);
        put(b, static_cast<uint16_t>(frame.length));
        bs::Frame sent = frame;
        if (variant == 1) sent.seq += 1;
        if (variant == 2) sent.length += 8;
        bs::encode_frame(sent, bytes);
        put(b, bytes, sizeof(bytes));
        for (uint64_t i = 0; i < sent.length; ++i) b.push_back(static_cast<uint8_t>(i * 7));
        write_seed("fuzz_wire", "recv_" + std::to_string(n++), b);
      }
    }
  }
  // Rank 0's error report, as send_error writes it.
  const std::string_view reason = "bootstrap: rank 2 joined with size 3, but rank 0 has size 4\n";
  bs::encode_frame({static_cast<uint16_t>(bs::Op::kError), 0, 0, 0, reason.size()}, bytes);
  Bytes b{1};
  put(b, static_cast<uint16_t>(bs::Op::kBarrier));
  put(b, uint32_t{1});
  put(b, uint64_t{0});
  put(b, uint32_t{0});
  put(b, uint16_t{0});
  put(b, bytes, sizeof(bytes));
  put(b, reason);
  write_seed("fuzz_wire", "error_report", b);
}

// ---- WQEs and doorbells -------------------------------------------------------------------------

// The requests the engine posts: each opcode, the sizes at the edges, both atomic widths.
std::vector<WorkRequest> requests(bool atomic32, uint32_t max_inline) {
  static const uint8_t kInline[128] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                       12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                       23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
  std::vector<WorkRequest> out;
  WorkRequest base{};
  base.qpn = 0x123;
  base.remote_addr = 0x7f0000001000;
  base.rkey = 0x1111;
  base.lkey = 0x2222;
  base.local_addr = 0x7f0000002000;
  base.sq_wqes = 256;
  base.signaled = 1;
  uint64_t index = 5;
  auto add = [&](Opcode opcode, uint32_t bytes, uint8_t width, uint8_t fence) {
    WorkRequest wr = base;
    wr.opcode = opcode;
    wr.bytes = bytes;
    wr.width = width;
    wr.fence = fence;
    wr.index = index;
    index = index * 3 + 0x10001;  // exercise the high bits of the index
    wr.operand = 0x0102030405060708ull;
    wr.compare = 0x1112131415161718ull;
    if (opcode == Opcode::kWriteInline) wr.inline_data = kInline;
    out.push_back(wr);
  };
  add(Opcode::kWrite, 4096, 0, 0);
  add(Opcode::kWrite, 0, 0, 0);
  add(Opcode::kRead, 8, 0, 1);
  add(Opcode::kRead, 0x7fffffff, 0, 0);
  add(Opcode::kWriteInline, 0, 0, 0);
  add(Opcode::kWriteInline, 5, 0, 0);
  add(Opcode::kWriteInline, max_inline, 0, 1);
  add(Opcode::kFetchAdd, 0, 8, 0);
  add(Opcode::kCompareSwap, 0, 8, 1);
  if (atomic32) {
    add(Opcode::kFetchAdd, 0, 4, 0);
    add(Opcode::kCompareSwap, 0, 4, 0);
  }
  return out;
}

template <typename Provider>
void wqe_seeds(const std::string& fuzzer) {
  int n = 0;
  for (const WorkRequest& wr : requests(Provider::kNativeAtomic32, Provider::kMaxInlineBytes)) {
    alignas(64) uint8_t wqe[Provider::kWqeBytes];
    std::memset(wqe, 0, sizeof(wqe));
    mori::provider::post_wqe<Provider>(wqe, wr);
    Bytes decode{0};
    put(decode, wr.index);
    put(decode, wqe, sizeof(wqe));
    write_seed(fuzzer, "wqe_" + std::to_string(n++), decode);

    Bytes request{1};
    put(request, wr.index);
    put(request, uint8_t{0xa5});  // garbage under the entry
    put(request, static_cast<uint8_t>(wr.opcode));
    put(request, static_cast<uint8_t>(wr.signaled | wr.fence << 1 | (wr.width == 4 ? 4 : 0)));
    put(request, uint8_t{8});  // sq_wqes = 256
    put(request, wr.qpn);
    put(request, wr.remote_addr);
    put(request, wr.rkey);
    put(request, wr.lkey);
    put(request, wr.local_addr);
    put(request, wr.bytes);
    put(request, wr.operand);
    put(request, wr.compare);
    if (wr.inline_data) put(request, static_cast<const uint8_t*>(wr.inline_data), 128);
    write_seed(fuzzer, "request_" + std::to_string(n++), request);
  }
}

template <typename Provider>
void doorbell_seeds(uint8_t provider, uint32_t qpn) {
  int n = 0;
  for (const uint64_t last : {uint64_t{0}, uint64_t{255}, uint64_t{0xfffe}, uint64_t{1} << 40}) {
    for (const uint32_t k : {0u, 1u, 255u}) {
      Bytes ring{provider, 1};
      put(ring, last);
      put(ring, qpn);
      put(ring, uint8_t{8});  // sq_wqes = 256
      put(ring, k);
      write_seed("fuzz_doorbell", std::string(Provider::kName) + "_ring_" + std::to_string(n++),
                 ring);
    }
    // The register and record as the provider's ring leaves them, read as garbage (mode 0).
    mori::state::RdmaEndpoint ep{};
    uint32_t record[2] = {};
    uint64_t reg = 0;
    alignas(64) uint8_t wqe[Provider::kWqeBytes] = {};
    ep.dbr = record;
    ep.db = &reg;
    ep.qpn = qpn;
    ep.sq_wqes = 256;
    Provider::ring_doorbell(ep, last + 17, wqe);
    Bytes garbage{provider, 0};
    put(garbage, last);
    put(garbage, qpn);
    put(garbage, uint8_t{8});
    put(garbage, reg);
    put(garbage, record[0]);
    put(garbage, record[1]);
    write_seed("fuzz_doorbell", std::string(Provider::kName) + "_state_" + std::to_string(n++),
               garbage);
  }
}

void fault_seeds() {
  int n = 0;
  for (const char* text : {"error:3,drop:5,delay_ms:7", "delay_ms:60000", "delay_ms:60001",
                           "error:18446744073709551615", "drop:18446744073709551616", "bogus:1",
                           "error:1,", "error:1,,drop:2", "error", "error:", ":5", "error:+1"}) {
    Bytes b;
    put(b, std::string_view(text));
    write_seed("fuzz_softnic_faults", "faults_" + std::to_string(n++), b);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <dir>\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  env_seeds();
  unique_id_seeds();
  wire_seeds();
  wqe_seeds<mori::provider::Mlx5>("fuzz_wqe_mlx5");
  wqe_seeds<mori::provider::Bnxt>("fuzz_wqe_bnxt");
  wqe_seeds<mori::provider::Ionic>("fuzz_wqe_ionic");
  doorbell_seeds<mori::provider::Mlx5>(0, 0x123);
  doorbell_seeds<mori::provider::Bnxt>(1, 0x123);
  doorbell_seeds<mori::provider::Ionic>(2, 0x123);
  fault_seeds();
  return 0;
}
