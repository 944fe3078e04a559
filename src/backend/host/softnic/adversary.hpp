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

#include <atomic>
#include <chrono>
#include <cstddef>
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

// The adversary's settings (SoftNicOptions::adversary).
struct AdversaryOptions {
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
Status parse_adversary(const char* on, const char* seed, AdversaryOptions* a);

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

// Where a remote range lives: mapped in this process (`mapped` set), or in process `pid` at `addr`.
struct RemoteSpan {
  void* mapped = nullptr;
  int pid = 0;
  uint64_t addr = 0;
};

inline bool is_write(const provider::WorkRequest& wr) {
  return wr.opcode == provider::Opcode::kWrite || wr.opcode == provider::Opcode::kWriteInline;
}
inline bool is_atomic(const provider::WorkRequest& wr) {
  return wr.opcode == provider::Opcode::kFetchAdd || wr.opcode == provider::Opcode::kCompareSwap;
}

// One request between its turn and its completion.
struct Flight {
  provider::WorkRequest wr{};
  uint8_t inline_copy[256];  // an inline write's data, out of the SQ slot
  CompletionStatus status = CompletionStatus::kSuccess;
  std::string why;               // a failed request: the QP's error text
  std::vector<uint32_t> todo;    // chunks still to land, in landing order
  uint64_t unit = 0;             // chunk size in bytes
  RemoteSpan remote;             // where the remote range of a write or read lives
  uint64_t old = 0;              // an atomic's old value, until it lands
  bool pending_landing = false;  // an atomic whose old value has not landed yet
  bool done = false;             // every byte landed; the CQE may follow at `due`
  Clock::time_point due{};       // deferred part of a read or atomic, then the CQE
};

// A QP's place in its SQ, which the NIC and the adversary share: the next index to take its turn,
// the producer index the NIC acts on, and whether the QP is in the error state.
struct QueueCursor {
  uint64_t next = 0;
  uint64_t announced = 0;
  bool broken = false;
};

// The NIC under the adversary (SoftNic implements it): the steps of one request on QP `qp`, each
// as the plain NIC makes it. The adversary chooses when each happens.
class AdversaryNic {
 public:
  virtual ~AdversaryNic() = default;
  // The producer index the QP's doorbell shows now (`seen`: the last value read).
  virtual uint64_t doorbell(size_t qp, uint64_t seen) = 0;
  // Decodes WQE `index` and makes the checks a NIC makes before its turn; on failure says why.
  virtual CompletionStatus decode(size_t qp, uint64_t index, provider::WorkRequest* wr,
                                  std::string* why) = 0;
  // The request's turn at the responder: an atomic executes (*old: the value before it); a write
  // or read is checked, and *remote says where its remote range lives.
  virtual CompletionStatus execute(size_t qp, const provider::WorkRequest& wr, uint64_t* old,
                                   RemoteSpan* remote, std::string* why) = 0;
  // Moves `bytes` between local memory and `remote` (to_remote: a write's).
  virtual bool place(const RemoteSpan& remote, void* local, uint64_t bytes, bool to_remote,
                     std::string* why) = 0;
  // An atomic's old value lands at wr.local_addr.
  virtual void land(const provider::WorkRequest& wr, uint64_t old) = 0;
  // WQE wr.index is complete: its CQE if signalled, or (a failure) the error CQE, and the QP goes
  // to the error state.
  virtual void complete(size_t qp, const provider::WorkRequest& wr, CompletionStatus status,
                        const std::string& why) = 0;
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

// The adversarial scheduler of a NIC's QPs (adversary.cpp). Owned by the NIC, which calls
// service() for each QP that is not in the error state.
class Adversary {
 public:
  // `nic_id` and each QP's number pick the QPs' streams of choices; `delay_ms` is the fault
  // injection's delay of each accepted doorbell.
  Adversary(const AdversaryOptions& options, size_t queues, uint64_t nic_id, uint32_t delay_ms);
  // One round of QP `qp`: accepts a doorbell, lands what is due, starts turns, writes the
  // completions that are due. Returns whether it did anything.
  bool service(AdversaryNic& nic, size_t qp, QueueCursor& q);
  // Whether QP `qp` has timed work (the NIC then yields instead of sleeping).
  bool waiting(size_t qp, const QueueCursor& q) const;
  // The first WQE of QP `qp` whose effects have not all happened.
  uint64_t first_unfinished(size_t qp, const QueueCursor& q) const;
  AdversaryStats stats() const;

 private:
  bool accept_doorbell(AdversaryNic& nic, size_t qp, QueueCursor& q, Clock::time_point now);
  bool start_turn(AdversaryNic& nic, size_t qp, QueueCursor& q, Clock::time_point now);
  bool advance_flights(AdversaryNic& nic, AdversaryQueue& a, Clock::time_point now);
  bool place_chunks(AdversaryNic& nic, Flight& f, size_t count);
  void finish(AdversaryNic& nic, AdversaryQueue& a, Flight& f, Clock::time_point now);
  bool write_completions(AdversaryNic& nic, size_t qp, Clock::time_point now, bool all);

  AdversaryOptions options_;
  uint32_t delay_ms_;
  std::vector<AdversaryQueue> queues_;
  struct Counters {
    std::atomic<uint64_t> doorbells_seen{0}, doorbells_accepted{0}, writes_split{0},
        reads_deferred{0}, passed_deferred{0}, atomics_deferred{0}, cqes_delayed{0};
  } stats_;
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
