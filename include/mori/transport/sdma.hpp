// The SDMA transport: the GPU's system DMA engines. Until a native engine exists it reaches peers
// exactly as P2P does, through the same peer mappings (the same ordering guarantees hold).
#pragma once

#include "mori/transport/p2p.hpp"

namespace mori::transport {

struct Sdma : P2p {
  static constexpr const char* kName = "sdma";
};

}  // namespace mori::transport
