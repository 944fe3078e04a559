// The listeners that new_unique_id() opens, held per process until rank 0 claims its own by the
// ID's nonce. Opening the listener when the ID is made (not when rank 0 joins) lets the other ranks
// connect first: the kernel queues their connections until rank 0 accepts them.
#pragma once

#include <cstdint>

#include "bootstrap/socket.hpp"

namespace mori::bootstrap {

// The listener new_unique_id() opened for `nonce` in this process (or in a parent before fork()),
// handed over once; invalid when there is none.
Fd claim_listener(uint64_t nonce);

}  // namespace mori::bootstrap
