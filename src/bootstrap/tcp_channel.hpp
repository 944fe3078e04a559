// Framed messages between rank 0 and the other ranks of the TCP bootstrap (wire.hpp), with the
// checks and the error texts that name who failed. Rank 0 is the hub of a star: it gathers one
// frame from every rank, then answers each. Any rank that sees something unexpected fails rather
// than guessing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bootstrap/socket.hpp"
#include "bootstrap/wire.hpp"
#include "mori/status.hpp"

namespace mori::bootstrap {

// "3", or "1-3, 5": a set of ranks for a message.
std::string format_ranks(const std::vector<int>& ranks);

// How much longer than rank 0 a non-root rank waits for an answer, so that rank 0's diagnosis
// ("rank 3 closed the connection") normally arrives before the rank's own, vaguer, timeout.
std::chrono::milliseconds answer_grace(std::chrono::milliseconds timeout);

IoResult send_frame(int fd, const Frame& frame, const void* payload, const Deadline& deadline);

// Tells a rank why the bootstrap failed. Best effort and brief: the rank may be gone already.
void send_error(int fd, uint32_t seq, const std::string& reason);

// On a non-root rank: waits for rank 0's answer to `expect` (op, seq, block, root, length) and
// reads its payload into `payload`. Rank 0's error report becomes the returned Status.
Status recv_answer(int fd, int rank, const Frame& expect, void* payload, const Deadline& deadline,
                   std::chrono::milliseconds timeout);

// On rank 0: receives one frame from each rank 1..size-1 at once, so that whichever rank fails is
// the one named. `expect` is rank 0's own call; rank r must send length_of(r) payload bytes, which
// land in dest(r).
Status gather_frames(const std::vector<Fd>& peers, const Frame& expect,
                     const std::function<uint64_t(int)>& length_of,
                     const std::function<uint8_t*(int)>& dest, const Deadline& deadline,
                     std::chrono::milliseconds timeout);

}  // namespace mori::bootstrap
