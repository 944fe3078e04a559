// The WQE-decoder fuzzer, written once over the provider (fuzz_wqe_mlx5.cpp, fuzz_wqe_bnxt.cpp,
// fuzz_wqe_ionic.cpp instantiate it). The software NIC's Codec::decode
// (src/backend/host/softnic/codec.hpp) parses WQE bytes the GPU wrote, which it must treat as
// untrusted.
//
// Input: byte 0 is the mode, the SQ index (8 bytes), then:
//   mode 0 (decode): the entry's bytes (Provider::kWqeBytes, zero-filled when short), decoded from
//     a heap block of exactly that size, so that AddressSanitizer catches a read past the entry;
//   mode 1 (writer): a work request, built from the input within the provider's documented limits
//     and written by the provider's own writer over garbage; the decoder must accept it.
// Invariants:
//   - a refusal carries a one-line reason;
//   - an accepted request has this SQ index, a known opcode, flags of 0 or 1, an atomic width of 8
//     (or 4 when the provider has 32-bit atomics), no width on a transfer, a transfer of at most
//     2^31 bytes, and inline data of at most kMaxInlineBytes lying inside the entry;
//   - an accepted request, written again by the provider's writer, decodes to the same request
//     (up to the SGE of an empty transfer, which the writers leave out);
//   - in mode 1, the decoded request is the one written, less the fields the WQE does not carry.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "backend/host/softnic/codec.hpp"
#include "fuzz_common.hpp"
#include "mori/provider/work_request.hpp"

namespace mori::fuzz {

using provider::Opcode;
using provider::WorkRequest;

// What a provider's WQE carries of a request, beyond what every provider carries. Specialized next
// to each instantiation.
template <typename Provider>
struct WqeTraits;
//   static const softnic::Codec& codec();
//   static constexpr uint32_t kQpnMask;        the qpn bits the WQE holds (0: none)
//   static constexpr bool kEmptyKeepsSge;      an empty transfer still carries its SGE

constexpr uint64_t kMaxTransferBytes = uint64_t{1} << 31;

// One SQ entry on the heap: exactly kWqeBytes, so that a decoder reading past it touches a
// redzone, aligned as the least aligned entry of an SQ is: 16 bytes, a slot (a 48-byte BNXT WQE
// sits at a multiple of 48; aligned_alloc also wants the size a multiple of the alignment).
template <typename Provider>
struct Entry {
  static_assert(Provider::kWqeBytes % 16 == 0, "an SQ entry is a whole number of 16-byte slots");
  Entry() : bytes(static_cast<uint8_t*>(std::aligned_alloc(16, Provider::kWqeBytes))) {}
  ~Entry() { std::free(bytes); }
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  uint8_t* bytes;
};

inline bool is_atomic(const WorkRequest& wr) {
  return wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap;
}

// Every field equal, and inline data equal by content.
inline bool same_request(const WorkRequest& a, const WorkRequest& b) {
  if (a.opcode != b.opcode) return false;
  const bool inline_same =
      a.opcode != Opcode::kWriteInline ||
      (a.bytes == b.bytes && std::memcmp(a.inline_data, b.inline_data, a.bytes) == 0);
  return a.signaled == b.signaled && a.fence == b.fence && a.width == b.width && a.qpn == b.qpn &&
         a.index == b.index && a.remote_addr == b.remote_addr && a.rkey == b.rkey &&
         a.lkey == b.lkey && a.local_addr == b.local_addr && a.bytes == b.bytes &&
         a.operand == b.operand && a.compare == b.compare && inline_same;
}

// Decodes entry `wqe`; on success checks the request's invariants and returns true.
template <typename Provider>
bool decode_checked(const uint8_t* wqe, uint64_t index, WorkRequest* wr) {
  const softnic::Codec& codec = WqeTraits<Provider>::codec();
  std::string why;
  if (!codec.decode(wqe, index, wr, &why)) {
    FUZZ_CHECK(one_printable_line(why));
    return false;
  }
  FUZZ_CHECK(wr->index == index);
  FUZZ_CHECK(wr->opcode <= Opcode::kCompareSwap);
  FUZZ_CHECK(wr->signaled <= 1 && wr->fence <= 1);
  if (is_atomic(*wr)) {
    FUZZ_CHECK(wr->width == 8 || (wr->width == 4 && Provider::kNativeAtomic32));
    FUZZ_CHECK(wr->bytes == 0 && wr->inline_data == nullptr);
  } else {
    FUZZ_CHECK(wr->width == 0);
    FUZZ_CHECK(wr->bytes <= kMaxTransferBytes);
  }
  if (wr->opcode == Opcode::kWriteInline) {
    const auto* data = static_cast<const uint8_t*>(wr->inline_data);
    FUZZ_CHECK(wr->bytes <= Provider::kMaxInlineBytes);
    FUZZ_CHECK(data >= wqe && data + wr->bytes <= wqe + Provider::kWqeBytes);
    uint8_t copy[Provider::kMaxInlineBytes];  // as the NIC copies it: every byte is read
    std::memcpy(copy, data, wr->bytes);
  } else {
    FUZZ_CHECK(wr->inline_data == nullptr);
  }
  return true;
}

// The request `wr` written by the provider over `garbage` bytes, then decoded.
template <typename Provider>
bool write_then_decode(const WorkRequest& wr, uint8_t garbage, WorkRequest* out) {
  Entry<Provider> entry;
  std::memset(entry.bytes, garbage, Provider::kWqeBytes);
  mori::provider::post_wqe<Provider>(entry.bytes, wr);
  if (!decode_checked<Provider>(entry.bytes, wr.index, out)) return false;
  // The entry is freed on return: compare inline data by content while it lives.
  if (out->opcode == Opcode::kWriteInline && wr.opcode == Opcode::kWriteInline) {
    FUZZ_CHECK(out->bytes == wr.bytes);
    FUZZ_CHECK(std::memcmp(out->inline_data, wr.inline_data, wr.bytes) == 0);
    out->inline_data = wr.inline_data;
  }
  return true;
}

// A valid request from the input, within the provider's documented limits.
template <typename Provider>
WorkRequest request_from(Input& in, uint64_t index, uint8_t (&inline_bytes)[128]) {
  WorkRequest wr{};
  wr.opcode = static_cast<Opcode>(in.take<uint8_t>() % 5);
  const uint8_t flags = in.take<uint8_t>();
  wr.signaled = flags & 1;
  wr.fence = (flags >> 1) & 1;
  wr.width = (Provider::kNativeAtomic32 && (flags & 4)) ? 4 : 8;
  wr.index = index;
  wr.sq_wqes = uint32_t{1} << (in.take<uint8_t>() % 17);
  wr.qpn = in.take<uint32_t>() & WqeTraits<Provider>::kQpnMask;
  wr.remote_addr = in.take<uint64_t>();
  wr.rkey = in.take<uint32_t>();
  wr.lkey = in.take<uint32_t>();
  wr.local_addr = in.take<uint64_t>();
  wr.bytes = in.take<uint32_t>();
  wr.operand = in.take<uint64_t>();
  wr.compare = in.take<uint64_t>();
  in.take_bytes(inline_bytes, sizeof(inline_bytes));
  switch (wr.opcode) {
    case Opcode::kWrite:
    case Opcode::kRead:
      // mlx5 takes up to 2^31 - 1 (bit 31 of byte_count marks inline data); the others 2^31.
      if (wr.bytes >= kMaxTransferBytes) wr.bytes &= 0x7fffffff;
      break;
    case Opcode::kWriteInline:
      wr.bytes %= Provider::kMaxInlineBytes + 1;
      wr.inline_data = inline_bytes;
      break;
    default:
      break;
  }
  return wr;
}

// What decoding `wr`'s WQE gives back: the request less what the WQE does not carry.
template <typename Provider>
WorkRequest carried(WorkRequest wr) {
  wr.sq_wqes = 0;
  if (is_atomic(wr)) {
    wr.bytes = 0;
    wr.inline_data = nullptr;
    if (wr.opcode == Opcode::kFetchAdd) wr.compare = 0;
    if (wr.width == 4) {
      wr.operand &= 0xffffffffu;
      wr.compare &= 0xffffffffu;
    }
    return wr;
  }
  wr.width = 0;
  wr.operand = wr.compare = 0;
  if (wr.opcode == Opcode::kWriteInline) {
    wr.lkey = 0;
    wr.local_addr = 0;
  } else {
    wr.inline_data = nullptr;
    if (wr.bytes == 0 && !WqeTraits<Provider>::kEmptyKeepsSge) {
      wr.lkey = 0;
      wr.local_addr = 0;
    }
  }
  return wr;
}

template <typename Provider>
int fuzz_wqe(const uint8_t* data, size_t size) {
  static_assert(Provider::kMaxInlineBytes <= 128, "request_from's inline buffer holds 128 bytes");
  FUZZ_CHECK(WqeTraits<Provider>::codec().wqe_bytes == Provider::kWqeBytes);
  Input in(data, size);
  const uint8_t mode = in.take<uint8_t>();
  const uint64_t index = in.take<uint64_t>();

  if ((mode & 1) == 0) {
    Entry<Provider> entry;
    in.take_bytes(entry.bytes, Provider::kWqeBytes);
    WorkRequest wr;
    if (!decode_checked<Provider>(entry.bytes, index, &wr)) return 0;
    // Representable: written again, it decodes to itself, up to what the writer leaves out (the
    // SGE of an empty transfer, which Ionic accepts with a length of 0).
    WorkRequest again;
    wr.sq_wqes = 64;
    FUZZ_CHECK(write_then_decode<Provider>(wr, 0x5a, &again));
    FUZZ_CHECK(same_request(carried<Provider>(again), carried<Provider>(wr)));
    return 0;
  }

  uint8_t inline_bytes[128];
  const uint8_t garbage = in.take<uint8_t>();
  const WorkRequest wr = request_from<Provider>(in, index, inline_bytes);
  WorkRequest got;
  FUZZ_CHECK(write_then_decode<Provider>(wr, garbage, &got));
  FUZZ_CHECK(same_request(got, carried<Provider>(wr)));
  return 0;
}

}  // namespace mori::fuzz
