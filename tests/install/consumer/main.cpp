// A user's program built against the installed package: a scope copy run by the host launcher.
#include <cstdio>
#include <cstring>
#include <mori/core.hpp>
#include <mori/host/launch.hpp>
#include <mori/version.hpp>
#include <vector>

int main() {
  std::vector<char> src(100000), dst(src.size());
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<char>(i * 7);
  auto status = mori::host::launch(
      {1}, {64}, [&] { mori::copy<mori::Warp>(dst.data(), src.data(), src.size()); });
  if (!status.ok() || std::memcmp(src.data(), dst.data(), src.size()) != 0) {
    std::printf("consumer failed: %s\n", status.message().c_str());
    return 1;
  }
  std::printf("consumer ok: mori %s, %s backend\n", mori::version(), mori::backend());
  return 0;
}
