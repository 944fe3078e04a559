// The WQE-decoder fuzzer (fuzz_wqe.hpp) for the mlx5 provider: softnic::mlx5_codec() against
// provider::Mlx5's writers (include/mori/provider/mlx5.hpp).
#include "fuzz_wqe.hpp"
#include "mori/provider/mlx5.hpp"

template <>
struct mori::fuzz::WqeTraits<mori::provider::Mlx5> {
  static const mori::softnic::Codec& codec() { return mori::softnic::mlx5_codec(); }
  static constexpr uint32_t kQpnMask = 0xffffff;
  static constexpr bool kEmptyKeepsSge = false;
};

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return mori::fuzz::fuzz_wqe<mori::provider::Mlx5>(data, size);
}
