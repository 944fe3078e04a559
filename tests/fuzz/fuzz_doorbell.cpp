// Fuzzes Codec::announced (src/backend/host/softnic/codec.hpp), the software NIC's reading of a
// QP's doorbell record and register, for every provider.
//
// Input: byte 0 picks the provider (mod 3), byte 1 the mode, then the NIC's previous answer
// `last` (8 bytes), the QP number (4), the SQ depth's log2 (1), then:
//   mode 0 (garbage): the register (8 bytes) and record (4 bytes) hold anything;
//   mode 1 (ring):    the provider's own ring_doorbell announces last + k, k < sq_wqes (the
//                     engine keeps at most sq_wqes - 1 WQEs outstanding, rdma_engine.hpp);
//   mode 2 (depth):   as mode 0, with any SQ depth, even 0 or not a power of two (no invariant
//                     but the sanitizers': the runtime never builds such an endpoint).
// Invariants: the answer never goes back, and moves forward by at most what the doorbell can
// name (mlx5: 65535, a 16-bit counter; bnxt: sq_wqes; ionic: sq_wqes - 1); after a ring it is
// exactly the ringer's index.
#include <cstdint>

#include "backend/host/softnic/codec.hpp"
#include "fuzz_common.hpp"
#include "mori/provider/bnxt.hpp"
#include "mori/provider/ionic.hpp"
#include "mori/provider/mlx5.hpp"

namespace {

using mori::fuzz::Input;
using mori::state::RdmaEndpoint;

template <typename Provider>
struct Doorbell;
template <>
struct Doorbell<mori::provider::Mlx5> {
  static const mori::softnic::Codec& codec() { return mori::softnic::mlx5_codec(); }
  static uint64_t max_ahead(uint32_t) { return 0xffff; }
  static constexpr uint32_t kQpnMask = 0xffffff;
};
template <>
struct Doorbell<mori::provider::Bnxt> {
  static const mori::softnic::Codec& codec() { return mori::softnic::bnxt_codec(); }
  static uint64_t max_ahead(uint32_t sq_wqes) { return sq_wqes; }
  static constexpr uint32_t kQpnMask = mori::provider::bnxt::BNXT_RE_DB_QID_MASK;
};
template <>
struct Doorbell<mori::provider::Ionic> {
  static const mori::softnic::Codec& codec() { return mori::softnic::ionic_codec(); }
  static uint64_t max_ahead(uint32_t sq_wqes) { return sq_wqes - 1; }
  static constexpr uint32_t kQpnMask = mori::provider::IONIC_QID_MASK;
};

template <typename Provider>
void fuzz_doorbell(Input& in, uint8_t mode) {
  using Traits = Doorbell<Provider>;
  const uint64_t last = in.take<uint64_t>();
  const uint32_t qpn = in.take<uint32_t>();
  const uint8_t depth_log2 = in.take<uint8_t>();
  uint32_t record[2] = {};
  uint64_t reg = 0;
  alignas(64) uint8_t last_wqe[Provider::kWqeBytes] = {};
  RdmaEndpoint ep{};
  ep.dbr = record;
  ep.db = &reg;
  ep.qpn = qpn & Traits::kQpnMask;
  ep.sq_wqes = uint32_t{1} << (depth_log2 % 17);

  if (mode == 2) {
    ep.qpn = qpn;
    ep.sq_wqes = in.take<uint32_t>();
    reg = in.take<uint64_t>();
    record[0] = in.take<uint32_t>();
    record[1] = in.take<uint32_t>();
    (void)Traits::codec().announced(ep, last);
    return;
  }
  if (mode == 1) {
    // QPs 0 and 1 are InfiniBand's special QPs, never an RC QP: the software NIC numbers its QPs
    // from 0x100. (Ionic's codec reads a zero register as "no doorbell yet", which for QP 0 would
    // also be a ring at a position that is a multiple of the depth.)
    if (ep.qpn < 2) ep.qpn += 2;
    const uint64_t k = in.take<uint32_t>() % ep.sq_wqes;
    in.take_bytes(last_wqe, sizeof(last_wqe));
    Provider::ring_doorbell(ep, last + k, last_wqe);
    FUZZ_CHECK(Traits::codec().announced(ep, last) == last + k);
    return;
  }
  reg = in.take<uint64_t>();
  record[0] = in.take<uint32_t>();
  record[1] = in.take<uint32_t>();
  const uint64_t ahead = Traits::codec().announced(ep, last) - last;  // wraps if it went back
  FUZZ_CHECK(ahead <= Traits::max_ahead(ep.sq_wqes));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t provider = in.take<uint8_t>() % 3;
  const uint8_t mode = in.take<uint8_t>() % 3;
  switch (provider) {
    case 0:
      fuzz_doorbell<mori::provider::Mlx5>(in, mode);
      break;
    case 1:
      fuzz_doorbell<mori::provider::Bnxt>(in, mode);
      break;
    default:
      fuzz_doorbell<mori::provider::Ionic>(in, mode);
      break;
  }
  return 0;
}
