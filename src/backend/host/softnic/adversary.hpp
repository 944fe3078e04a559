// The software NIC's adversarial mode (MORI_SOFTNIC_ADVERSARIAL=1): the NIC still obeys every
// ordering rule of an RC QP, but uses each freedom those rules leave it, so that code which leans
// on the in-order, complete-at-once behaviour of the plain software NIC fails here as it would on
// hardware. The freedoms (adversary.cpp cites the rule behind each one):
//
//   doorbells   a new producer index may wait for later ones: the NIC acts on the latest of
//               several doorbells at once
//   writes      a write's bytes land in chunks, in random order, over several NIC rounds; the next
//               request starts only once they have all landed (writes, atomics and reads behind a
//               write see it whole)
//   reads       an RDMA READ may read its data late: a random prefix of its chunks at its turn, the
//               rest after a delay, while later unfenced writes and atomics go ahead (a retried
//               READ is re-executed). A fenced request waits for it
//   atomics     an atomic executes at its turn, but its old value may land in local memory late,
//               after later unfenced requests fetched their local data. A fenced request waits
//   completions a CQE is written some time after its request's data has landed, in order
//
// Delays are microseconds (the NIC yields while it has timed work, it never sleeps for it), so
// a run costs little more than the plain mode. MORI_SOFTNIC_SEED picks the random choices.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "backend/host/softnic/codec.hpp"
#include "mori/provider/work_request.hpp"
#include "mori/status.hpp"

namespace mori::softnic {

// Uniform in [lo, hi] (lo == hi: exactly that).
struct Range {
  uint32_t lo = 0;
  uint32_t hi = 0;
};

struct Adversary {
  bool on = false;
  uint64_t seed = 1;                   // MORI_SOFTNIC_SEED; mixed with the NIC's id and the QP
  Range doorbell_hold_us{0, 10};       // how long a new doorbell value may wait for later ones
  Range doorbell_count{1, 3};          // ... or until this many doorbell values have been seen
  Range cqe_delay_us{0, 10};           // from a request's last byte to its CQE
  uint32_t read_defer_percent = 50;    // reads that read the rest of their data late
  Range read_delay_us{0, 20};          // ... how late
  uint32_t atomic_defer_percent = 50;  // atomics whose old value lands late
  Range atomic_delay_us{0, 10};        // ... how late
  uint32_t chunk_bytes = 64;           // the placement unit, aligned in the remote address space
  uint32_t max_chunks = 64;            // per request: longer ones use proportionally larger units
  Range chunks_per_round{1, 8};        // chunks of one write placed per NIC round
  // Tests: called after each chunk of a write or read lands (SQ index, offset, bytes).
  std::function<void(uint64_t index, uint64_t offset, uint64_t bytes)> on_place;
};

// Reads MORI_SOFTNIC_ADVERSARIAL (0 or 1) and MORI_SOFTNIC_SEED (a decimal uint64) into *a; null
// or empty texts keep the defaults. A bad value fails with one line naming the variable.
Status parse_adversary(const char* on, const char* seed, Adversary* a);

// What the adversary did so far (all QPs), for tests and diagnostics.
struct AdversaryStats {
  uint64_t doorbells_seen = 0;      // distinct doorbell values the NIC observed
  uint64_t doorbells_accepted = 0;  // announcements it acted on (seen - accepted: coalesced)
  uint64_t writes_split = 0;        // writes placed in more than one chunk
  uint64_t reads_deferred = 0;      // reads that read part of their data late
  uint64_t passed_deferred = 0;     // requests started while an earlier read or atomic was pending
  uint64_t atomics_deferred = 0;    // atomics whose old value landed late
  uint64_t cqes_delayed = 0;        // completions written after a nonzero delay
};

using Clock = std::chrono::steady_clock;

// One request between its turn and its completion.
struct Flight {
  provider::WorkRequest wr{};
  uint8_t inline_copy[256];  // an inline write's data, out of the SQ slot
  CompletionStatus status = CompletionStatus::kSuccess;
  std::string why;             // a failed request: the QP's error text
  std::vector<uint32_t> todo;  // chunks still to land, in landing order
  uint64_t unit = 0;           // chunk size in bytes
  void* mapped = nullptr;      // the remote range (SoftNic::RemoteSpan)
  int pid = 0;
  uint64_t old = 0;              // an atomic's old value, until it lands
  bool pending_landing = false;  // an atomic whose old value has not landed yet
  bool done = false;             // every byte landed; the CQE may follow at `due`
  Clock::time_point due{};       // deferred part of a read or atomic, then the CQE
};

// The adversary's state of one QP.
struct AdversaryQueue {
  uint64_t rng = 0;
  uint64_t seen = 0;               // the latest producer index observed
  uint32_t seen_count = 0;         // doorbell values observed since the last accepted one
  uint32_t want_count = 0;         // accept after this many ...
  Clock::time_point hold_until{};  // ... or at this time
  std::deque<Flight> flights;      // in SQ order, from q.next - flights.size()
};

// splitmix64: the adversary's random numbers.
inline uint64_t next_random(uint64_t* state) {
  uint64_t x = (*state += 0x9e3779b97f4a7c15ull);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline uint32_t draw(uint64_t* state, Range r) {
  return r.hi <= r.lo ? r.lo : r.lo + static_cast<uint32_t>(next_random(state) % (r.hi - r.lo + 1));
}

}  // namespace mori::softnic
