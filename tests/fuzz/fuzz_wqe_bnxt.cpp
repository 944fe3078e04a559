// The WQE-decoder fuzzer (fuzz_wqe.hpp) for the bnxt provider: softnic::bnxt_codec() against
// provider::Bnxt's writers (include/mori/provider/bnxt.hpp).
#include "fuzz_wqe.hpp"
#include "mori/provider/bnxt.hpp"

template <>
struct mori::fuzz::WqeTraits<mori::provider::Bnxt> {
  static const mori::softnic::Codec& codec() { return mori::softnic::bnxt_codec(); }
  static constexpr uint32_t kQpnMask = 0;
  static constexpr bool kEmptyKeepsSge = true;
};

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return mori::fuzz::fuzz_wqe<mori::provider::Bnxt>(data, size);
}
