// RcQp's requester (rc_qp_state.hpp): IBTA Vol 1 9.7.x from the requester's side. Requests are
// packetized in posting order, each packet keeps its PSN for good, and recovery is go-back-N:
// on a PSN sequence error NAK, an implied NAK or a timeout, everything from the first lost PSN
// is sent again (requests already retired are skipped: the responder has them).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "backend/host/wire/rc_qp_state.hpp"

namespace mori::wire::rc {
namespace {

// Unacknowledged packets in flight at most: bounds the retransmission bursts and the responder's
// work per timeout (a NIC's own bound is its SQ and its resources; any value is allowed by 9.7.7).
constexpr uint64_t kMaxUnacked = 1024;

const char* op_name(RequestOp op) {
  switch (op) {
    case RequestOp::kWrite:
      return "write";
    case RequestOp::kRead:
      return "read";
    case RequestOp::kFetchAdd:
      return "fetch-add";
    case RequestOp::kCompareSwap:
      return "compare-swap";
  }
  return "request";
}

std::string hex_psn(uint64_t psn) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%06" PRIx64, psn & kPsnMask);
  return text;
}

}  // namespace

Requester::Requester(Port& port) : port_(port), mtu_(mtu_bytes(port.attr.path_mtu)) {
  // IBTA 9.7.6.1.3: the local ACK timeout is 4.096 us * 2^timeout; 0 disables it. Exponents past
  // 31 are reserved; cap there.
  const uint8_t t = std::min<uint8_t>(port.attr.timeout, 31);
  period_ = port.attr.timeout == 0 ? Clock::duration::zero()
                                   : std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::nanoseconds(uint64_t{4096} << t));
  next_ = send_ = high_ = progress_mark_ = port.attr.sq_psn & kPsnMask;
}

long Requester::find(uint64_t psn) const {
  // queue_ is sorted by first (every request takes at least one PSN, except flushed ones).
  auto it = std::upper_bound(queue_.begin(), queue_.end(), psn,
                             [](uint64_t v, const Pending& e) { return v < e.first; });
  while (it != queue_.begin()) {
    --it;
    if (psn < it->end()) return it - queue_.begin();
    if (it->count != 0) break;
  }
  return -1;
}

uint64_t Requester::una() {
  // A read or atomic keeps its responder resources until everything before it has completed
  // too: the responder replays only its last max_dest_rd_atomic atomics, so the requester may not
  // have more than that many executed since its oldest unfinished one.
  while (head_ < queue_.size() && queue_[head_].done) {
    if (queue_[head_].sent && reads_or_atomic(queue_[head_]) && reads_outstanding_ > 0)
      --reads_outstanding_;
    ++head_;
  }
  if (head_ == queue_.size()) return high_;
  const Pending& e = queue_[head_];
  uint64_t at = e.first;
  if (e.request.op == RequestOp::kWrite) at = e.acked;
  if (e.request.op == RequestOp::kRead) at = e.first + e.received;
  return std::min(at, high_);
}

void Requester::post(const Request& request, Clock::time_point now) {
  Pending e;
  e.request = request;
  e.first = e.acked = next_;
  if (port_.error) {  // IBTA 10.3.1: work posted to a QP in the error state is flushed
    e.done = true;
    e.completion = {request.id, WcStatus::kFlushed, "the QP is in the error state"};
    queue_.push_back(std::move(e));
    return;
  }
  if (request.op == RequestOp::kWrite || request.op == RequestOp::kRead) {
    // IBTA 9.4.3: a read request takes the PSNs of all its response packets
    e.count = packets_for(request.bytes, mtu_);
  } else {
    e.count = 1;  // IBTA 9.4.5: an atomic is one packet and one response
  }
  next_ += e.count;
  queue_.push_back(std::move(e));
  pump(now);
}

uint32_t Requester::transmit(Pending& e, uint64_t psn) {
  const Request& r = e.request;
  if (r.op == RequestOp::kRead) {
    // A read sent again asks for what has not arrived: from the first missing response's PSN,
    // with the address and length moved on (IBTA 9.7.5.1.3's retried read; rxe's req_retry does
    // the same). Asking for all of it again would need every response of a long read to arrive
    // in one go, which loss may never allow.
    const uint64_t done = uint64_t{e.received} * mtu_;
    Packet p = port_.header(BthOpcode::kReadRequest, static_cast<uint32_t>(e.first + e.received));
    p.va = r.remote_addr + done;
    p.rkey = r.rkey;
    p.dma_length = static_cast<uint32_t>(r.bytes - done);
    p.ack_request = true;
    port_.send(p);
    return e.count - e.received;
  }
  if (r.op != RequestOp::kWrite) {
    const bool narrow = r.width == 4;
    BthOpcode op = r.op == RequestOp::kFetchAdd
                       ? (narrow ? BthOpcode::kFetchAdd32 : BthOpcode::kFetchAdd)
                       : (narrow ? BthOpcode::kCompareSwap32 : BthOpcode::kCompareSwap);
    Packet p = port_.header(op, static_cast<uint32_t>(e.first));
    p.va = r.remote_addr;
    p.rkey = r.rkey;
    const uint64_t mask = narrow ? 0xFFFFFFFFull : ~0ull;
    p.swap_add = r.operand & mask;
    p.compare = r.compare & mask;
    p.ack_request = true;
    port_.send(p);
    return 1;
  }
  // IBTA 9.7.2: a write is First, Middle..., Last, or Only; RETH on First and Only; every packet
  // but the last carries exactly one MTU. The data is read from the source now, not copied.
  const uint32_t k = static_cast<uint32_t>(psn - e.first);
  const uint64_t offset = uint64_t{k} * mtu_;
  const uint32_t length = static_cast<uint32_t>(std::min<uint64_t>(mtu_, r.bytes - offset));
  BthOpcode op = e.count == 1       ? BthOpcode::kWriteOnly
                 : k == 0           ? BthOpcode::kWriteFirst
                 : k + 1 == e.count ? BthOpcode::kWriteLast
                                    : BthOpcode::kWriteMiddle;
  Packet p = port_.header(op, static_cast<uint32_t>(psn));
  if (k == 0) {
    p.va = r.remote_addr;
    p.rkey = r.rkey;
    p.dma_length = r.bytes;
  }
  p.ack_request = k + 1 == e.count;  // AckReq on each message's last packet (9.2.2)
  if (length != 0) p.payload = std::span<const uint8_t>(r.local + offset, length);
  port_.send(p);
  return 1;
}

void Requester::pump(Clock::time_point now) {
  if (port_.error) return;
  const uint32_t max_rd = std::max<uint32_t>(1, port_.attr.max_rd_atomic);
  while (send_ < next_) {
    const long i = find(send_);
    if (i < 0) break;
    Pending& e = queue_[i];
    if (e.done) {  // retired: the responder has all of it
      send_ = e.end();
      continue;
    }
    if (e.request.op == RequestOp::kWrite) send_ = std::max(send_, e.acked);
    if (e.request.op == RequestOp::kRead) send_ = std::max(send_, e.first + e.received);
    const bool fresh = send_ >= high_;
    if (fresh) {
      if (high_ - una() >= kMaxUnacked) break;
      // IBTA 9.7.7 / ibv_qp_attr.max_rd_atomic: reads and atomics outstanding at once
      if (reads_or_atomic(e) && !e.sent && reads_outstanding_ >= max_rd) break;
    }
    if (reads_or_atomic(e) && !e.sent) {
      e.sent = true;
      ++reads_outstanding_;
    }
    const uint32_t psns = transmit(e, send_);
    if (!fresh) ++port_.stats.retransmitted;
    send_ += psns;
    if (send_ > high_) high_ = send_;
    if (deadline_ == Clock::time_point::max() && period_ != Clock::duration::zero())
      deadline_ = now + period_;
  }
}

void Requester::complete(Pending& e, WcStatus status, std::string why) {
  if (e.done) return;
  e.done = true;
  e.completion = {e.request.id, status, std::move(why)};
}

void Requester::fail(long index, WcStatus status, std::string why) {
  // IBTA 10.3.1: the QP enters the error state; this request carries the error, every later
  // one (and any earlier one still unfinished) is flushed, all retired in order by poll().
  for (size_t j = head_; j < queue_.size(); ++j) {
    if (static_cast<long>(j) == index) {
      complete(queue_[j], status, why);
    } else {
      complete(queue_[j], WcStatus::kFlushed, "flushed: an earlier request failed");
    }
  }
  port_.error = true;
  reads_outstanding_ = 0;
  deadline_ = Clock::time_point::max();
}

void Requester::acknowledge_through(uint64_t psn) {
  // IBTA 9.7.5.1.2: an acknowledgment for PSN p acknowledges every packet up to p. A read or
  // atomic before p whose response has not come was executed and its response lost: an implied
  // NAK; go back to it (9.7.5.1.x).
  bool implied = false;
  for (size_t i = head_; i < queue_.size() && queue_[i].first <= psn; ++i) {
    Pending& e = queue_[i];
    if (e.done) continue;
    if (e.request.op == RequestOp::kWrite) {
      e.acked = std::max(e.acked, std::min(psn + 1, e.end()));
      if (e.acked == e.end()) complete(e, WcStatus::kSuccess, "");
    } else if (!implied && psn >= e.first + e.received) {
      implied = true;
      // Every response already on its way behind the lost one implies the same loss: go back
      // once for them, and again only for a response to a packet sent after this go-back (the
      // responder handles packets in order, so then the retransmission was lost too).
      const uint64_t resume = e.first + e.received;
      if (resume != implied_psn_ || psn >= implied_until_) {
        implied_psn_ = resume;
        implied_until_ = high_;
        retransmit_from(resume);
      }
    }
  }
}

void Requester::retransmit_from(uint64_t psn) {
  const long i = find(psn);
  if (i < 0 || psn >= high_) return;
  const Pending& e = queue_[i];
  if (e.request.op == RequestOp::kRead) psn = e.first + e.received;  // what is missing of it
  if (e.request.op != RequestOp::kWrite && e.request.op != RequestOp::kRead) psn = e.first;
  if (psn < send_) send_ = psn;
}

void Requester::note_progress(Clock::time_point now) {
  // IBTA 9.7.6.1.3: the timer restarts on every acknowledgment of forward progress, and the retry
  // count resets with it.
  const uint64_t at = una();
  if (at > progress_mark_) {
    progress_mark_ = at;
    retries_ = 0;
    if (period_ != Clock::duration::zero()) deadline_ = now + period_;
  }
  if (at >= high_) deadline_ = Clock::time_point::max();  // nothing unacknowledged
}

void Requester::on_response(const Packet& p, Clock::time_point now) {
  if (port_.error) return;
  // The wire's 24-bit PSN, placed within 2^23 of the oldest unacknowledged one (9.7.1).
  const uint64_t base = una();
  const int64_t offset = psn_diff(p.psn, static_cast<uint32_t>(base));
  const uint64_t psn = base + offset;
  // ACKs, NAKs and responses outside the outstanding window are ghosts or duplicates: ignored
  // (IBTA 9.7.5.1.3's "duplicate response").
  if (offset < 0 || psn >= high_) return;
  switch (p.opcode) {
    case BthOpcode::kAcknowledge:
      // IBTA 9.3.5: syndrome 000xxxxx is an ACK, 011xxxxx a NAK; an RNR NAK (001xxxxx) answers
      // only SENDs, which this QP never sends, and the rest is reserved: neither is taken as one
      if (is_nak(p.syndrome)) {
        on_nak(p, psn);
      } else if ((p.syndrome & 0xE0) == 0) {
        acknowledge_through(psn);
      }
      break;
    case BthOpcode::kReadResponseFirst:
    case BthOpcode::kReadResponseMiddle:
    case BthOpcode::kReadResponseLast:
    case BthOpcode::kReadResponseOnly:
      on_read_response(p, psn);
      break;
    case BthOpcode::kAtomicAcknowledge:
      on_atomic_ack(p, psn);
      break;
    default:
      break;
  }
  if (port_.error) return;
  note_progress(now);
  pump(now);
}

void Requester::on_nak(const Packet& p, uint64_t psn) {
  ++port_.stats.naks_received;
  const auto code = static_cast<NakCode>(p.syndrome & 0x1F);
  // IBTA 9.7.5.2: a NAK at p acknowledges every packet before p
  if (psn > 0) acknowledge_through(psn - 1);
  if (code == NakCode::kPsnSequenceError) {
    retransmit_from(psn);  // IBTA 9.7.5.2.1: go back to the PSN the responder expects
    return;
  }
  long i = find(psn);
  if (i < 0 || queue_[i].done) i = static_cast<long>(head_);
  const char* what =
      op_name(i < static_cast<long>(queue_.size()) ? queue_[i].request.op : RequestOp::kWrite);
  WcStatus status = WcStatus::kRemoteOperation;
  std::string text = "NAK remote operational error";
  if (code == NakCode::kInvalidRequest) {
    status = WcStatus::kRemoteInvalidRequest;
    text = "NAK invalid request";
  } else if (code == NakCode::kRemoteAccessError) {
    status = WcStatus::kRemoteAccess;
    text = "NAK remote access error";
  } else if (code != NakCode::kRemoteOperationalError) {
    text = "NAK with reserved code " + std::to_string(static_cast<int>(code));
  }
  fail(i, status, text + " for PSN " + hex_psn(psn) + " (" + what + ")");
}

void Requester::on_read_response(const Packet& p, uint64_t psn) {
  const long i = find(psn);
  if (i < 0 || queue_[i].done) return;  // a duplicate of a retired read's response
  Pending& e = queue_[i];
  if (e.request.op != RequestOp::kRead) {
    fail(i, WcStatus::kBadResponse,
         std::string("read response for PSN ") + hex_psn(psn) + ", which is a " +
             op_name(e.request.op));
    return;
  }
  const uint32_t k = static_cast<uint32_t>(psn - e.first);
  // IBTA 9.7.5.1.3: responses out of sequence are discarded; the timer or a later response
  // recovers.
  if (k != e.received) return;
  // The opcode fits the position: the first packet starts the message, the last ends it. A
  // retried read's responses start again with First (or Only) mid-message.
  const bool last = k + 1 == e.count;
  const bool ends =
      p.opcode == BthOpcode::kReadResponseLast || p.opcode == BthOpcode::kReadResponseOnly;
  const bool starts =
      p.opcode == BthOpcode::kReadResponseFirst || p.opcode == BthOpcode::kReadResponseOnly;
  const uint64_t offset = uint64_t{k} * mtu_;
  const uint64_t length = std::min<uint64_t>(mtu_, e.request.bytes - offset);
  if (ends != last || (k == 0 && !starts) || p.payload.size() != length) {
    fail(i, WcStatus::kBadResponse,
         std::string("read response for PSN ") + hex_psn(psn) + " is " + opcode_name(p.opcode) +
             " with " + std::to_string(p.payload.size()) + " bytes, packet " +
             std::to_string(k + 1) + " of " + std::to_string(e.count) + " with " +
             std::to_string(length) + " expected");
    return;
  }
  if (psn > 0) acknowledge_through(psn - 1);  // a response implies the ACK of what precedes it
  if (length != 0) std::memcpy(e.request.local + offset, p.payload.data(), length);
  if (++e.received == e.count) complete(e, WcStatus::kSuccess, "");
}

void Requester::on_atomic_ack(const Packet& p, uint64_t psn) {
  const long i = find(psn);
  if (i < 0 || queue_[i].done) return;
  Pending& e = queue_[i];
  if (e.request.op == RequestOp::kWrite || e.request.op == RequestOp::kRead) {
    fail(i, WcStatus::kBadResponse,
         std::string("atomic ACK for PSN ") + hex_psn(psn) + ", which is a " +
             op_name(e.request.op));
    return;
  }
  if (psn > 0) acknowledge_through(psn - 1);
  // IBTA 9.4.6: the original value, to the requester's buffer in host order
  if (e.request.width == 4) {
    const uint32_t v = static_cast<uint32_t>(p.original);
    std::memcpy(e.request.local, &v, 4);
  } else {
    std::memcpy(e.request.local, &p.original, 8);
  }
  complete(e, WcStatus::kSuccess, "");
}

void Requester::progress(Clock::time_point now) {
  if (port_.error) return;
  if (deadline_ != Clock::time_point::max() && now >= deadline_) {
    // IBTA 9.7.6.1.3: the local ACK timeout expired with packets unacknowledged
    const uint64_t at = una();
    if (at < high_) ++port_.stats.timeouts;
    if (at >= high_) {
      deadline_ = Clock::time_point::max();  // all acknowledged meanwhile: nothing to time
    } else if (++retries_ > port_.attr.retry_cnt) {
      // IBTA 9.7.6.1.4: retries exhausted; the oldest request fails, the QP enters error
      char text[160];
      const double ms = std::chrono::duration<double, std::milli>(period_).count();
      std::snprintf(text, sizeof text, "no ACK for PSN %s after %u retries of %.3g ms",
                    hex_psn(at).c_str(), static_cast<unsigned>(port_.attr.retry_cnt), ms);
      fail(static_cast<long>(head_), WcStatus::kRetryExceeded, text);
      return;
    } else {
      retransmit_from(at);
      implied_psn_ = ~0ull;  // the responses to this go-back may imply a loss again
      deadline_ = now + period_;
    }
  }
  pump(now);
}

bool Requester::poll(Completion* out) {
  if (queue_.empty() || !queue_.front().done) return false;  // completions in posting order
  *out = std::move(queue_.front().completion);
  queue_.pop_front();
  if (head_ > 0) --head_;
  return true;
}

}  // namespace mori::wire::rc
