// The software NIC's adversarial scheduling (adversary.hpp): the Adversary that serves a QP in
// place of the plain NIC when SoftNicOptions::adversary.on. Each freedom below cites the rule that
// allows it.
//
// The rules it keeps (and the plain mode keeps trivially):
//  - A requester transmits requests in posting order, and a responder executes RDMA WRITE and
//    atomic requests in the order received (IBTA Vol 1, ch. 9, "a responder shall execute SEND
//    requests, RDMA WRITE requests and ATOMIC Operation requests in the message order in which
//    they are received"; wording taken from a secondary copy of the spec, section number not
//    checked here). So a request starts only after an earlier write's bytes have all landed, and
//    atomics execute at their turn.
//  - A request with the fence indicator starts only after every earlier RDMA READ and atomic of
//    its QP has completed (ibv_post_send(3), IBV_SEND_FENCE; the same rule in that copy: "a work
//    request with the fence attribute set shall block until all prior RDMA Read and Atomic WRs
//    have completed").
//  - Completions come in posting order, whatever the execution order ("all WQEs shall be
//    completed in the order they were posted independent of their execution order", ibid.), and
//    a completion means the request's bytes have all landed.
#include "backend/host/softnic/adversary.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>
#include <thread>

namespace mori::softnic {
namespace {

using provider::Opcode;
using provider::WorkRequest;

std::chrono::microseconds us(uint32_t n) { return std::chrono::microseconds(n); }
bool chance(uint64_t* rng, uint32_t percent) { return next_random(rng) % 100 < percent; }

// The chunk plan of a write or read: units aligned in the remote address space, at most
// max_chunks of them, landing in a random order (Fisher-Yates).
void plan_chunks(Flight& f, const AdversaryOptions& adv, uint64_t* rng) {
  const uint64_t bytes = f.wr.bytes;
  if (bytes == 0) return;
  uint64_t unit = std::max<uint32_t>(adv.chunk_bytes, 1);
  const auto chunks = [&](uint64_t u) { return (f.wr.remote_addr % u + bytes + u - 1) / u; };
  while (chunks(unit) > std::max<uint32_t>(adv.max_chunks, 1)) unit *= 2;
  f.unit = unit;
  f.todo.resize(chunks(unit));
  for (uint32_t i = 0; i < f.todo.size(); ++i) f.todo[i] = i;
  for (size_t i = f.todo.size(); i > 1; --i) std::swap(f.todo[i - 1], f.todo[next_random(rng) % i]);
}

}  // namespace

Status parse_adversary(const char* on, const char* seed, AdversaryOptions* a) {
  if (on != nullptr && *on != 0) {
    const std::string_view v(on);
    if (v != "0" && v != "1")
      return Status::error("MORI_SOFTNIC_ADVERSARIAL: \"" + std::string(v) + "\" is not 0 or 1");
    a->on = v == "1";
  }
  if (seed != nullptr && *seed != 0) {
    const std::string_view v(seed);
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc{} || end != v.data() + v.size())
      return Status::error("MORI_SOFTNIC_SEED: \"" + std::string(v) +
                           "\" is not a decimal number below 2^64");
    a->seed = n;
  }
  return {};
}

Adversary::Adversary(const AdversaryOptions& options, size_t queues, uint64_t nic_id,
                     uint32_t delay_ms)
    : options_(options), delay_ms_(delay_ms), queues_(queues) {
  for (size_t i = 0; i < queues; ++i) {  // each QP its own stream of choices
    uint64_t seed = options_.seed ^ (nic_id * 0x100000001b3ull);
    queues_[i].rng = next_random(&seed) ^ i;
  }
}

AdversaryStats Adversary::stats() const {
  const auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  return {get(stats_.doorbells_seen), get(stats_.doorbells_accepted), get(stats_.writes_split),
          get(stats_.reads_deferred), get(stats_.passed_deferred),    get(stats_.atomics_deferred),
          get(stats_.cqes_delayed)};
}

uint64_t Adversary::first_unfinished(size_t qp, const QueueCursor& q) const {
  for (const Flight& f : queues_[qp].flights)
    if (!f.done) return f.wr.index;
  return q.next;
}

bool Adversary::waiting(size_t qp, const QueueCursor& q) const {
  return !queues_[qp].flights.empty() || queues_[qp].seen != q.announced;
}

bool Adversary::service(AdversaryNic& nic, size_t qp, QueueCursor& q) {
  const Clock::time_point now = Clock::now();
  AdversaryQueue& a = queues_[qp];
  bool progress = accept_doorbell(nic, qp, q, now);
  progress |= advance_flights(nic, a, now);
  // Turns in order; a write whose bytes are still landing holds back the requests behind it.
  while (!q.broken && q.next < q.announced &&
         (a.flights.empty() || a.flights.back().done || !is_write(a.flights.back().wr)))
    progress |= start_turn(nic, qp, q, now);
  if (!q.broken) progress |= write_completions(nic, qp, now, false);
  return progress;
}

// Doorbell coalescing. Every provider's doorbell carries the absolute producer index, not a
// count of new WQEs: mlx5's doorbell record holds sq.cur_post & 0xffff (rdma-core
// providers/mlx5/qp.c, post_send_db), BNXT's SQ doorbell the tail slot and its epoch
// (providers/bnxt_re/db.c, bnxt_re_ring_sq_db), Ionic's `dbell | prod`
// (providers/ionic/ionic_queue.h, ionic_queue_dbell_val). A later doorbell thus subsumes the
// earlier ones, and a NIC that reads the record or the register late sees only the latest: here,
// a new value waits for up to doorbell_count values or doorbell_hold_us.
bool Adversary::accept_doorbell(AdversaryNic& nic, size_t qp, QueueCursor& q,
                                Clock::time_point now) {
  AdversaryQueue& a = queues_[qp];
  const AdversaryOptions& adv = options_;
  const uint64_t value = nic.doorbell(qp, a.seen);
  if (value != a.seen) {
    a.seen = value;
    stats_.doorbells_seen.fetch_add(1, std::memory_order_relaxed);
    if (a.seen_count++ == 0) {
      a.want_count = draw(&a.rng, adv.doorbell_count);
      a.hold_until = now + us(draw(&a.rng, adv.doorbell_hold_us));
    }
  }
  if (a.seen == q.announced || (a.seen_count < a.want_count && now < a.hold_until)) return false;
  q.announced = a.seen;
  a.seen_count = 0;
  stats_.doorbells_accepted.fetch_add(1, std::memory_order_relaxed);
  if (delay_ms_ != 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
  return true;
}

// Decodes and starts WQE q.next.
bool Adversary::start_turn(AdversaryNic& nic, size_t qp, QueueCursor& q, Clock::time_point now) {
  const AdversaryOptions& adv = options_;
  AdversaryQueue& a = queues_[qp];
  const uint64_t index = q.next++;
  Flight& f = a.flights.emplace_back();
  std::string why;
  CompletionStatus status = nic.decode(qp, index, &f.wr, &why);
  f.wr.index = index;
  bool passes = false;  // an earlier read or atomic is still pending
  for (Flight& e : a.flights)
    if (&e != &f && !e.done) {
      // The fence indicator: this request waits until every earlier RDMA READ and atomic of
      // the QP has completed; they complete now.
      if (status == CompletionStatus::kSuccess && f.wr.fence)
        finish(nic, a, e, now);
      else
        passes = true;
    }
  if (status == CompletionStatus::kSuccess) status = nic.execute(qp, f.wr, &f.old, &f.remote, &why);
  if (status != CompletionStatus::kSuccess) {
    // The QP fails at this WQE: the earlier ones complete first, in order.
    f.status = status;
    f.why = why;
    f.done = true;
    for (Flight& e : a.flights) finish(nic, a, e, now);
    return write_completions(nic, qp, now, true);
  }
  if (is_atomic(f.wr)) {
    // An atomic executes at its turn on the responder, but its old value lands in local memory
    // only with the response. Without the fence indicator a later request need not wait for
    // that response (ibv_post_send(3), IBV_SEND_FENCE), so it may fetch its own local data
    // (a write's source) before the old value is there.
    f.pending_landing = true;
    if (chance(&a.rng, adv.atomic_defer_percent)) {
      f.due = now + us(draw(&a.rng, adv.atomic_delay_us));
      stats_.atomics_deferred.fetch_add(1, std::memory_order_relaxed);
    }
  } else {  // a write or a read (execute refuses any other opcode)
    if (f.wr.opcode == Opcode::kWriteInline)
      std::memcpy(f.inline_copy, f.wr.inline_data, f.wr.bytes);  // execute: at most 256
    plan_chunks(f, adv, &a.rng);
  }
  if (passes) stats_.passed_deferred.fetch_add(1, std::memory_order_relaxed);
  if (f.todo.size() > 1 && is_write(f.wr))
    stats_.writes_split.fetch_add(1, std::memory_order_relaxed);
  if (f.wr.opcode == Opcode::kRead && !f.todo.empty() && chance(&a.rng, adv.read_defer_percent)) {
    // A responder may delay an RDMA READ and execute later SEND, RDMA WRITE and atomic requests
    // first (IBTA Vol 1, ch. 9, relaxed ordering of RDMA READ; the copy cited at the top: "the
    // responder is allowed to delay execution of the RDMA READ", "permitted to begin executing
    // one or more SEND or RDMA WRITE requests that arrive after the RDMA READ request"), and a
    // duplicate READ request is executed again ("RDMA READ: re-execute request"), so a READ
    // retried from a lost response packet returns its first packets from one execution and the
    // rest from a later one. Here: the chunks before a random cut land now, the rest at `due`.
    const uint64_t cut = next_random(&a.rng) % f.todo.size();
    std::vector<uint32_t> late;
    for (uint32_t c : f.todo)
      if (c >= cut) late.push_back(c);
    std::erase_if(f.todo, [&](uint32_t c) { return c >= cut; });
    place_chunks(nic, f, f.todo.size());
    f.todo = std::move(late);
    f.due = now + us(draw(&a.rng, adv.read_delay_us));
    stats_.reads_deferred.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (f.wr.opcode == Opcode::kRead) {
    place_chunks(nic, f, f.todo.size());
  } else if (is_write(f.wr)) {
    place_chunks(nic, f, draw(&a.rng, adv.chunks_per_round));
  }
  if (f.todo.empty() && (!f.pending_landing || now >= f.due)) finish(nic, a, f, now);
  return true;
}

// Deferred reads and atomics whose time has come, and the next chunks of the write in progress.
bool Adversary::advance_flights(AdversaryNic& nic, AdversaryQueue& a, Clock::time_point now) {
  bool progress = false;
  for (Flight& f : a.flights) {
    if (f.done) continue;
    if (is_write(f.wr)) {
      progress |= place_chunks(nic, f, draw(&a.rng, options_.chunks_per_round));
      if (f.todo.empty()) finish(nic, a, f, now);
    } else if (now >= f.due) {
      finish(nic, a, f, now);
      progress = true;
    }
  }
  return progress;
}

// Lands up to `count` chunks of f, in its landing order. Neither IB nor the providers promise the
// order in which one request's bytes are placed: ibv_query_qp_data_in_order(3) ("checks whether
// WQE data is guaranteed to be written in-order, and thus reader may poll for data instead of
// poll for completion") answers 0 without a capability that only mlx5 reports
// (providers/mlx5/verbs.c, mlx5_query_qp_data_in_order); bnxt_re and ionic do not implement it
// (libibverbs/dummy_ops.c answers 0), and the runtime never asks. Only the completion says all
// bytes are there.
bool Adversary::place_chunks(AdversaryNic& nic, Flight& f, size_t count) {
  bool placed = false;
  const bool to_remote = is_write(f.wr);
  const uint64_t start = f.wr.remote_addr, end = start + f.wr.bytes;
  const uint64_t base = start - start % std::max<uint64_t>(f.unit, 1);
  auto* local = to_remote && f.wr.opcode == Opcode::kWriteInline
                    ? f.inline_copy
                    : reinterpret_cast<uint8_t*>(f.wr.local_addr);
  for (; count > 0 && !f.todo.empty() && f.status == CompletionStatus::kSuccess; --count) {
    const uint64_t c = f.todo.back();
    f.todo.pop_back();
    const uint64_t lo = std::max(start, base + c * f.unit);
    const uint64_t hi = std::min(end, base + (c + 1) * f.unit);
    const uint64_t offset = lo - start;
    RemoteSpan span = f.remote;
    span.addr = lo;
    if (span.mapped) span.mapped = static_cast<uint8_t*>(span.mapped) + offset;
    std::string why;
    if (!nic.place(span, local + offset, hi - lo, to_remote, &why)) {
      f.status = CompletionStatus::kRemoteAccess;  // completes with the error at its turn
      f.why = why;
      f.todo.clear();
    }
    placed = true;
    if (options_.on_place) options_.on_place(f.wr.index, offset, hi - lo);
  }
  return placed;
}

// Every remaining effect of f happens now; its CQE may follow after a delay.
void Adversary::finish(AdversaryNic& nic, AdversaryQueue& a, Flight& f, Clock::time_point now) {
  if (f.done) return;
  place_chunks(nic, f, f.todo.size());
  if (f.pending_landing) nic.land(f.wr, f.old);
  f.pending_landing = false;
  f.done = true;
  // A completion may be written any time after the request completed; only their order is
  // fixed (the rule quoted at the top).
  const uint32_t delay = draw(&a.rng, options_.cqe_delay_us);
  f.due = now + us(delay);
  if (delay != 0) stats_.cqes_delayed.fetch_add(1, std::memory_order_relaxed);
}

// Writes the completions that are due, in SQ order (all: every finished one, due or not). A failed
// request puts the QP in the error state; the requests behind it are dropped (softnic.hpp).
bool Adversary::write_completions(AdversaryNic& nic, size_t qp, Clock::time_point now, bool all) {
  bool progress = false;
  std::deque<Flight>& flights = queues_[qp].flights;
  while (!flights.empty() && flights.front().done && (all || now >= flights.front().due)) {
    Flight& f = flights.front();
    progress = true;
    const bool failed = f.status != CompletionStatus::kSuccess;
    nic.complete(qp, f.wr, f.status, f.why);
    if (failed) {
      flights.clear();
      return true;
    }
    flights.pop_front();
  }
  return progress;
}

}  // namespace mori::softnic
