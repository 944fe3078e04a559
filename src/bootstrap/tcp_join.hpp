// Joining the TCP bootstrap's star. Rank r > 0 connects to rank 0 (retrying while rank 0 is not yet
// listening) and sends a hello; rank 0 accepts until every rank has sent a valid hello, then
// answers each with kJoin, or with the reason the job cannot start.
#pragma once

#include <chrono>
#include <vector>

#include "bootstrap/socket.hpp"
#include "bootstrap/unique_id.hpp"
#include "mori/status.hpp"

namespace mori::bootstrap {

// Rank 0: on success (*peers)[r] is the connection to rank r, for r in 1..size-1.
Status join_as_root(const Fd& listener, const UniqueIdFields& id, int size,
                    std::chrono::milliseconds timeout, std::vector<Fd>* peers);

// Rank r > 0: on success *root is the connection to rank 0.
Status join_as_leaf(const UniqueIdFields& id, int rank, int size, std::chrono::milliseconds timeout,
                    Fd* root);

}  // namespace mori::bootstrap
