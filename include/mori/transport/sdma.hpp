// The SDMA transport: the GPU's system DMA engines. Until a native engine exists it reaches peers
// exactly as P2P does, through the same peer mappings (the same ordering guarantees hold). It is an
// alias, not a subclass, so a family dispatched to either is instantiated (and emitted) once.
#pragma once

#include "mori/transport/p2p.hpp"

namespace mori::transport {

using Sdma = P2p;

}  // namespace mori::transport
