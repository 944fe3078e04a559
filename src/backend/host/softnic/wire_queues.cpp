// The software NIC's queue pairs on the wire (softnic.hpp, "On the wire"): a wire QP's WQEs become
// requests of its RoCEv2 RC queue pair, the port's datagrams are handed to the QP they name, and
// the QP's retired requests become the provider's completions.
#include <poll.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "backend/host/softnic/softnic.hpp"

namespace mori::softnic {
namespace {

using provider::Opcode;
using provider::WorkRequest;

CompletionStatus completion_status(wire::WcStatus status) {
  switch (status) {
    case wire::WcStatus::kSuccess:
      return CompletionStatus::kSuccess;
    case wire::WcStatus::kRemoteAccess:
      return CompletionStatus::kRemoteAccess;
    case wire::WcStatus::kRemoteInvalidRequest:
      return CompletionStatus::kRemoteInvalidRequest;
    case wire::WcStatus::kRemoteOperation:
      return CompletionStatus::kRemoteOperation;
    case wire::WcStatus::kRetryExceeded:
      return CompletionStatus::kRetryExceeded;
    case wire::WcStatus::kBadResponse:
      return CompletionStatus::kBadResponse;
    default:
      return CompletionStatus::kFlushed;
  }
}

}  // namespace

uint8_t* SoftNic::Responder::resolve(uint32_t rkey, uint64_t addr, uint64_t bytes,
                                     std::string* why) {
  std::lock_guard<std::mutex> lock(nic_.memory_mutex_);
  for (const LocalRegion& r : nic_.memory_.local) {
    if (r.lkey != rkey || !r.remote) continue;
    if (inside(addr, bytes, r.base, r.bytes)) return reinterpret_cast<uint8_t*>(addr);
  }
  *why = "rkey " + std::to_string(rkey) + " does not cover " + std::to_string(bytes) +
         " bytes at " + std::to_string(addr);
  return nullptr;
}

// Atomics on a registered buffer of this PE take its lock, as every other NIC's do on it
// (private_atomic in softnic.cpp); the heap is shared memory, where CPU atomics are enough.
bool SoftNic::Responder::begin_atomic(const uint8_t* at, std::string* why) {
  bool locked_memory = false;
  {
    std::lock_guard<std::mutex> lock(nic_.memory_mutex_);
    const uint64_t a = reinterpret_cast<uint64_t>(at);
    for (const LocalRegion& r : nic_.memory_.local)
      locked_memory |= r.private_memory && inside(a, 1, r.base, r.bytes);
  }
  locked_ = locked_memory && nic_.options_.private_locks != nullptr;
  return !locked_ || nic_.options_.private_locks->lock(nic_.options_.pe, why);
}

void SoftNic::Responder::end_atomic(const uint8_t*) {
  if (locked_) nic_.options_.private_locks->unlock(nic_.options_.pe);
  locked_ = false;
}

void SoftNic::log_wire_stats() const {
  if (options_.port)
    std::fprintf(stderr, "%sdatagrams for no QP of this NIC: %llu\n", options_.log_prefix.c_str(),
                 static_cast<unsigned long long>(wire_unclaimed_));
  for (const Queue& q : queues_) {
    if (!q.rc) continue;
    const wire::QpStats& s = q.rc->stats();
    std::fprintf(stderr,
                 "%sqp %u to PE %d: sent %llu, received %llu, retransmitted %llu, timeouts %llu, "
                 "NAKs sent %llu received %llu, ACKs %llu, duplicates %llu, atomics replayed "
                 "%llu, dropped %llu\n",
                 options_.log_prefix.c_str(), q.served.ep->qpn, q.served.target_pe,
                 (unsigned long long)s.packets_sent, (unsigned long long)s.packets_received,
                 (unsigned long long)s.retransmitted, (unsigned long long)s.timeouts,
                 (unsigned long long)s.naks_sent, (unsigned long long)s.naks_received,
                 (unsigned long long)s.acks_sent, (unsigned long long)s.duplicates_received,
                 (unsigned long long)s.atomics_replayed, (unsigned long long)s.dropped);
  }
}

wire::QpStats SoftNic::wire_stats(size_t i) const {
  return i < queues_.size() && queues_[i].rc ? queues_[i].rc->stats() : wire::QpStats{};
}

// The checks a NIC makes before a request leaves (its form and the local key), then the request.
CompletionStatus SoftNic::wire_request(Queue::Posted& posted, wire::Request* request,
                                       std::string* why) {
  const WorkRequest& wr = posted.wr;
  request->id = wr.index;
  request->remote_addr = wr.remote_addr;
  request->rkey = wr.rkey;
  std::lock_guard<std::mutex> lock(memory_mutex_);
  switch (wr.opcode) {
    case Opcode::kFetchAdd:
    case Opcode::kCompareSwap:
      if (!options_.atomics) {
        *why = "atomic on a NIC that reports atomic_cap IBV_ATOMIC_NONE";
        return CompletionStatus::kRemoteInvalidRequest;
      }
      if (wr.width != 4 && wr.width != 8) {
        *why = "atomic of width " + std::to_string(wr.width);
        return CompletionStatus::kRemoteInvalidRequest;
      }
      if (!local_ok(wr.lkey, wr.local_addr, wr.width, why))
        return CompletionStatus::kLocalProtection;
      request->op = wr.opcode == Opcode::kFetchAdd ? wire::RequestOp::kFetchAdd
                                                   : wire::RequestOp::kCompareSwap;
      request->width = static_cast<uint8_t>(wr.width);
      request->bytes = wr.width;
      request->local = reinterpret_cast<uint8_t*>(&posted.old);
      request->operand = wr.operand;
      request->compare = wr.compare;
      return CompletionStatus::kSuccess;
    case Opcode::kWriteInline:
      if (wr.bytes > sizeof posted.inline_data) {
        *why = "inline write of " + std::to_string(wr.bytes) + " bytes";
        return CompletionStatus::kLocalLength;
      }
      std::memcpy(posted.inline_data, wr.inline_data, wr.bytes);
      request->op = wire::RequestOp::kWrite;
      request->local = posted.inline_data;
      request->bytes = wr.bytes;
      return CompletionStatus::kSuccess;
    case Opcode::kWrite:
    case Opcode::kRead:
      // A zero-length request checks no key (IBTA 9.4.3, 9.4.4).
      if (wr.bytes != 0 && !local_ok(wr.lkey, wr.local_addr, wr.bytes, why))
        return CompletionStatus::kLocalProtection;
      request->op = wr.opcode == Opcode::kRead ? wire::RequestOp::kRead : wire::RequestOp::kWrite;
      request->local = reinterpret_cast<uint8_t*>(wr.local_addr);
      request->bytes = wr.bytes;
      return CompletionStatus::kSuccess;
    default:
      *why = "opcode " + std::to_string(static_cast<unsigned>(wr.opcode)) + " not executed";
      return CompletionStatus::kRemoteInvalidRequest;
  }
}

// Posts every newly announced WQE. One that fails a local check stops the posting: it completes
// with its error once the requests before it have (completions are in order on an RC QP).
bool SoftNic::post_wire(Queue& q, Clock::time_point now) {
  const uint64_t announced = codec_.announced(*q.served.ep, q.announced);
  if (announced == q.announced) return false;
  q.announced = announced;
  if (options_.faults.delay_ms != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.faults.delay_ms));
  for (; q.next < announced && !q.local_error; ++q.next) {
    Queue::Posted& posted = q.on_wire.emplace_back();
    std::string why;
    CompletionStatus status = decode_checked(q, q.next, &posted.wr, &why);
    wire::Request request;
    if (status == CompletionStatus::kSuccess) status = wire_request(posted, &request, &why);
    if (status != CompletionStatus::kSuccess) {
      q.local_error = Queue::LocalError{q.next, posted.wr, status, why};
      q.on_wire.pop_back();
      break;
    }
    q.rc->post(request, now);
  }
  return true;
}

// Writes the completions of the requests the wire QP retired, in order.
bool SoftNic::complete_wire(Queue& q) {
  state::RdmaEndpoint& ep = *q.served.ep;
  bool progress = false;
  wire::Completion c;
  while (q.rc->poll(&c)) {
    progress = true;
    if (q.on_wire.empty() || c.id != q.on_wire.front().wr.index) {
      // RcQp retires in posting order; anything else would land results in the wrong WQE's bytes.
      const uint64_t expected = q.on_wire.empty() ? q.next : q.on_wire.front().wr.index;
      WorkRequest wr{};
      wr.index = expected;
      fail_queue(q, expected, wr, CompletionStatus::kGeneral,
                 "the wire QP retired WQE " + std::to_string(c.id) + " before WQE " +
                     std::to_string(expected));
      return true;
    }
    Queue::Posted posted = q.on_wire.front();
    q.on_wire.pop_front();
    const WorkRequest& wr = posted.wr;
    if (c.status == wire::WcStatus::kSuccess && !q.broken) {
      if (wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap)
        land_atomic_result(wr, posted.old);
      executed_.fetch_add(1, std::memory_order_relaxed);
      if (wr.signaled && wr.index != options_.faults.drop_at)
        codec_.complete(ep, &q.cq_produced, wr.index, wr, CompletionStatus::kSuccess);
    } else if (c.status == wire::WcStatus::kFlushed || q.broken) {
      codec_.complete(ep, &q.cq_produced, wr.index, wr, CompletionStatus::kFlushed);
    } else {
      // The QP's first error: its WQEs not yet posted are dropped, as fail_queue drops them.
      const wire::QpAttributes& a = q.rc->attributes();
      fail_queue(q, wr.index, wr, completion_status(c.status),
                 c.why + " (on the wire to PE " + std::to_string(q.served.target_pe) + ", qp " +
                     std::to_string(a.dest_qp_num) + ")");
      q.local_error.reset();
    }
  }
  if (q.local_error && q.on_wire.empty() && !q.broken) {
    Queue::LocalError e = *q.local_error;
    q.local_error.reset();
    fail_queue(q, e.index, e.wr, e.status, e.why);
    progress = true;
  }
  return progress;
}

bool SoftNic::service_wire(Queue& q, Clock::time_point now) {
  bool progress = q.broken ? false : post_wire(q, now);
  q.rc->progress(now);
  progress |= complete_wire(q);
  if (q.broken && q.on_wire.empty()) progress |= flush(q);
  return progress;
}

// Hands each waiting datagram to the wire QP it names; the rest are dropped, as a NIC drops
// packets for a QP it does not have (IBTA 9.6.1.5: an invalid destination QP is silently dropped).
bool SoftNic::receive_wire(Clock::time_point now) {
  if (options_.port == nullptr) return false;
  bool progress = false;
  uint8_t buffer[9216];
  for (int i = 0; i < 256; ++i) {
    const size_t n = options_.port->receive(buffer);
    if (n == 0) break;
    progress = true;
    const std::span<const uint8_t> datagram(buffer, n);
    uint32_t qpn = 0;
    const auto it = wire::dest_qpn(datagram, &qpn) ? wire_queues_.find(qpn) : wire_queues_.end();
    if (it == wire_queues_.end()) {
      ++wire_unclaimed_;
      continue;
    }
    queues_[it->second].rc->receive(datagram, now);
  }
  return progress;
}

// The idle NIC's sleep when it has wire QPs: until a datagram arrives, or `us` pass.
void SoftNic::wait_for_wire(uint32_t us) {
  const int fd = options_.port ? options_.port->fd() : -1;
  if (fd < 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    return;
  }
  pollfd p{fd, POLLIN, 0};
  const timespec t{0, static_cast<long>(us) * 1000};
  ::ppoll(&p, 1, &t, nullptr);
}

}  // namespace mori::softnic
