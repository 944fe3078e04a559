// The WQE-decoder fuzzer (fuzz_wqe.hpp) for the ionic provider: softnic::ionic_codec() against
// provider::Ionic's writers (include/mori/provider/ionic.hpp).
#include "fuzz_wqe.hpp"
#include "mori/provider/ionic.hpp"

template <>
struct mori::fuzz::WqeTraits<mori::provider::Ionic> {
  static const mori::softnic::Codec& codec() { return mori::softnic::ionic_codec(); }
  static constexpr uint32_t kQpnMask = 0;
  static constexpr bool kEmptyKeepsSge = false;
};

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return mori::fuzz::fuzz_wqe<mori::provider::Ionic>(data, size);
}
