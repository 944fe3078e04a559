// A first kernel on the host backend: two blocks of 128 threads; each warp copies its slice of a
// buffer with copy<Warp>, then block 0 checks the result after a block barrier.
#include <cstdio>
#include <cstring>
#include <vector>

#include "mori/core.hpp"
#include "mori/host/launch.hpp"

int main() {
  constexpr size_t kSlice = 1 << 20;
  constexpr int kBlocks = 2, kThreads = 128, kWarpsPerBlock = kThreads / 64;
  std::vector<char> src(kBlocks * kWarpsPerBlock * kSlice), dst(src.size(), 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i % 251);

  auto status = mori::host::launch({kBlocks}, {kThreads}, [&] {
    namespace plat = mori::platform;
    const size_t warp = plat::block_rank() * kWarpsPerBlock + plat::warp_id();
    mori::copy<mori::Warp>(dst.data() + warp * kSlice, src.data() + warp * kSlice, kSlice);
  });
  if (!status.ok()) {
    std::fprintf(stderr, "hello_copy: %s\n", status.message().c_str());
    return 1;
  }
  const bool same = std::memcmp(src.data(), dst.data(), src.size()) == 0;
  std::printf("hello_copy: %d blocks x %d threads copied %zu bytes with copy<Warp>: %s\n", kBlocks,
              kThreads, src.size(), same ? "ok" : "MISMATCH");
  return same ? 0 : 1;
}
