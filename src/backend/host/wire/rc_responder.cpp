// RcQp's responder (rc_qp_state.hpp): IBTA Vol 1 9.7.x from the responder's side. Each request
// packet is checked against the expected PSN (ePSN): the next one is executed, an earlier one is
// a duplicate (9.7.5.1.3's rules per operation), a later one is a gap (a PSN sequence error NAK,
// 9.7.5.2.1). ACKs are coalesced (9.7.5.1.1); read responses, atomic ACKs and NAKs go at once.
#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "backend/host/wire/rc_qp_state.hpp"

namespace mori::wire::rc {
namespace {

std::string hex_psn(uint32_t psn) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%06" PRIx32, psn & kPsnMask);
  return text;
}

bool is_atomic(BthOpcode op) { return has_atomic_eth(op); }

}  // namespace

Responder::Responder(Port& port, ResponderMemory& memory)
    : port_(port),
      memory_(memory),
      mtu_(mtu_bytes(port.attr.path_mtu)),
      epsn_(port.attr.rq_psn & kPsnMask),
      atomics_(std::max<size_t>(1, port.attr.max_dest_rd_atomic)) {}

void Responder::on_request(const Packet& p, Clock::time_point now) {
  const int32_t d = psn_diff(p.psn, epsn_);
  if (d > 0) {
    // IBTA 9.7.5.2.1: a gap: NAK with ePSN, once until ePSN moves (the requester goes back to it;
    // more NAKs for the rest of its burst would only send it back again)
    if (!sequence_nak_sent_) {
      sequence_nak_sent_ = true;
      nak(NakCode::kPsnSequenceError, epsn_, "PSN " + hex_psn(p.psn) + " beyond ePSN");
    }
    return;
  }
  if (d < 0) {
    ++port_.stats.duplicates_received;
    duplicate(p, now);
    return;
  }
  execute(p, now);
}

void Responder::advance(uint32_t psns) {
  epsn_ = (epsn_ + psns) & kPsnMask;
  sequence_nak_sent_ = false;
}

void Responder::mark_ack(Clock::time_point now) {
  if (!ack_pending_) ack_since_ = now;
  ack_pending_ = true;
}

void Responder::nak(NakCode code, uint32_t psn, std::string why) {
  last_error_ = std::move(why);
  Packet n = port_.header(BthOpcode::kAcknowledge, psn);
  n.syndrome = nak_syndrome(code);
  n.msn = msn_ & kPsnMask;
  port_.send(n);
  ++port_.stats.naks_sent;
}

void Responder::execute(const Packet& p, Clock::time_point now) {
  // A packet beyond this responder's own path MTU is malformed here (IBTA 9.7.5.2.3: a length
  // error is an invalid request)
  if (p.payload.size() > mtu_) {
    nak(NakCode::kInvalidRequest, p.psn,
        "payload of " + std::to_string(p.payload.size()) + " bytes beyond the path MTU");
    return;
  }
  // IBTA 9.7.5.2.3: a new message inside an unfinished write, or a
  // Middle/Last without its First, is an invalid request.
  const bool continues = p.opcode == BthOpcode::kWriteMiddle || p.opcode == BthOpcode::kWriteLast;
  if (continues != in_write_) {
    nak(NakCode::kInvalidRequest, p.psn,
        in_write_ ? "a new request inside an unfinished write" : "a write segment without First");
    return;
  }
  switch (p.opcode) {
    case BthOpcode::kWriteFirst:
    case BthOpcode::kWriteMiddle:
    case BthOpcode::kWriteLast:
    case BthOpcode::kWriteOnly:
      if (!write_segment(p)) return;
      advance(1);
      if (p.ack_request) mark_ack(now);
      return;
    case BthOpcode::kReadRequest:
      read(p);
      return;
    default:
      break;
  }
  if (!is_atomic(p.opcode)) {
    nak(NakCode::kInvalidRequest, p.psn, "an opcode this responder does not execute");
    return;
  }
  uint64_t original = 0;
  if (!atomic(p, &original)) return;
  ++msn_;
  // IBTA 9.7.5.1.3: keep the result, so that a duplicate is answered without executing
  atomics_[next_atomic_] = {p.psn, original, true};
  next_atomic_ = (next_atomic_ + 1) % atomics_.size();
  advance(1);
  send_atomic_ack(p.psn, original);
}

bool Responder::write_segment(const Packet& p) {
  const uint32_t length = static_cast<uint32_t>(p.payload.size());
  if (p.opcode == BthOpcode::kWriteFirst || p.opcode == BthOpcode::kWriteOnly) {
    // IBTA 9.7.4.1.4: First carries exactly one MTU, Only all of the DMA length
    const bool only = p.opcode == BthOpcode::kWriteOnly;
    if (only ? length != p.dma_length : (length != mtu_ || p.dma_length <= mtu_)) {
      nak(NakCode::kInvalidRequest, p.psn,
          "write segment of " + std::to_string(length) + " bytes for a DMA length of " +
              std::to_string(p.dma_length));
      return false;
    }
    uint8_t* base = nullptr;
    if (p.dma_length != 0) {  // C9-88: a zero-length transfer checks no R_Key (as rxe)
      std::string why;
      base = memory_.resolve(p.rkey, p.va, p.dma_length, &why);
      if (base == nullptr) {
        nak(NakCode::kRemoteAccessError, p.psn, "write: " + why);
        return false;
      }
    }
    if (length != 0) std::memcpy(base, p.payload.data(), length);
    if (only) {
      ++msn_;
    } else {
      in_write_ = true;
      write_base_ = base;
      write_length_ = p.dma_length;
      write_done_ = length;
    }
    return true;
  }
  // Middle: exactly one MTU, leaving at least one byte for Last; Last: the rest, 1..MTU
  const uint32_t left = write_length_ - write_done_;
  const bool last = p.opcode == BthOpcode::kWriteLast;
  if (last ? (length == 0 || length != left) : (length != mtu_ || length >= left)) {
    nak(NakCode::kInvalidRequest, p.psn,
        "write segment of " + std::to_string(length) + " bytes with " + std::to_string(left) +
            " of the DMA length left");
    in_write_ = false;
    return false;
  }
  std::memcpy(write_base_ + write_done_, p.payload.data(), length);
  write_done_ += length;
  if (last) {
    in_write_ = false;
    ++msn_;
  }
  return true;
}

void Responder::read(const Packet& p) {
  // Executed for a new read and again for a duplicate one: reads are idempotent (9.7.5.1.3)
  const bool fresh = p.psn == epsn_;
  uint8_t* base = nullptr;
  if (p.dma_length != 0) {
    std::string why;
    base = memory_.resolve(p.rkey, p.va, p.dma_length, &why);
    if (base == nullptr) {
      nak(NakCode::kRemoteAccessError, p.psn, "read: " + why);
      return;
    }
  }
  const uint32_t n = packets_for(p.dma_length, mtu_);
  if (fresh) {
    ++msn_;
    advance(n);  // IBTA 9.4.3: the read took the PSNs of its responses
  }
  ack_pending_ = false;  // the responses acknowledge everything before them (9.7.5.1.2)
  for (uint32_t k = 0; k < n; ++k) {
    const BthOpcode op = n == 1       ? BthOpcode::kReadResponseOnly
                         : k == 0     ? BthOpcode::kReadResponseFirst
                         : k + 1 == n ? BthOpcode::kReadResponseLast
                                      : BthOpcode::kReadResponseMiddle;
    Packet r = port_.header(op, p.psn + k);
    r.syndrome = kAckSyndrome;
    r.msn = msn_ & kPsnMask;
    const uint64_t offset = uint64_t{k} * mtu_;
    const uint32_t length = static_cast<uint32_t>(std::min<uint64_t>(mtu_, p.dma_length - offset));
    if (length != 0) r.payload = std::span<const uint8_t>(base + offset, length);
    port_.send(r);
  }
}

bool Responder::atomic(const Packet& p, uint64_t* original) {
  const bool narrow = p.opcode == BthOpcode::kFetchAdd32 || p.opcode == BthOpcode::kCompareSwap32;
  const uint32_t width = narrow ? 4 : 8;
  // IBTA 9.4.5: an atomic's address is naturally aligned; a misaligned one is an invalid request
  if (p.va % width != 0) {
    nak(NakCode::kInvalidRequest, p.psn, "atomic at a misaligned address");
    return false;
  }
  std::string why;
  uint8_t* at = memory_.resolve(p.rkey, p.va, width, &why);
  if (at == nullptr) {
    nak(NakCode::kRemoteAccessError, p.psn, "atomic: " + why);
    return false;
  }
  if (reinterpret_cast<uintptr_t>(at) % width != 0) {
    nak(NakCode::kInvalidRequest, p.psn, "atomic target misaligned in memory");
    return false;
  }
  // The target PE's own threads update the same words with atomics: so does the responder, inside
  // whatever lock the memory's other writers take (ResponderMemory::begin_atomic).
  if (!memory_.begin_atomic(at, &why)) {
    nak(NakCode::kRemoteOperationalError, p.psn, "atomic: " + why);
    return false;
  }
  const bool add = p.opcode == BthOpcode::kFetchAdd || p.opcode == BthOpcode::kFetchAdd32;
  if (narrow) {
    std::atomic_ref<uint32_t> word(*reinterpret_cast<uint32_t*>(at));
    uint32_t old;
    if (add) {
      old = word.fetch_add(static_cast<uint32_t>(p.swap_add));
    } else {
      old = static_cast<uint32_t>(p.compare);
      word.compare_exchange_strong(old, static_cast<uint32_t>(p.swap_add));
    }
    *original = old;
  } else {
    std::atomic_ref<uint64_t> word(*reinterpret_cast<uint64_t*>(at));
    uint64_t old;
    if (add) {
      old = word.fetch_add(p.swap_add);
    } else {
      old = p.compare;
      word.compare_exchange_strong(old, p.swap_add);
    }
    *original = old;
  }
  memory_.end_atomic(at);
  return true;
}

void Responder::send_atomic_ack(uint32_t psn, uint64_t original) {
  ack_pending_ = false;  // the atomic ACK acknowledges everything before it too
  Packet a = port_.header(BthOpcode::kAtomicAcknowledge, psn);
  a.syndrome = kAckSyndrome;
  a.msn = msn_ & kPsnMask;
  a.original = original;
  port_.send(a);
}

void Responder::duplicate(const Packet& p, Clock::time_point now) {
  // IBTA 9.7.5.1.3 (duplicate requests)
  if (p.opcode == BthOpcode::kReadRequest) {
    read(p);  // executed again, its responses sent again from its PSN
    return;
  }
  if (is_atomic(p.opcode)) {
    // Never executed twice: the saved result, or (if it is older than the saved ones) an
    // invalid request NAK
    for (const SavedAtomic& s : atomics_) {
      if (s.valid && s.psn == (p.psn & kPsnMask)) {
        ++port_.stats.atomics_replayed;
        send_atomic_ack(s.psn, s.original);
        return;
      }
    }
    nak(NakCode::kInvalidRequest, p.psn, "a duplicate atomic older than the saved results");
    return;
  }
  mark_ack(now);  // writes: not executed again; acknowledged again (with ePSN - 1, coalesced)
}

void Responder::progress(Clock::time_point) {
  if (!ack_pending_) return;
  ack_pending_ = false;
  // IBTA 9.7.5.1.1: one ACK for the latest PSN acknowledges all the packets before it
  Packet a = port_.header(BthOpcode::kAcknowledge, epsn_ - 1);
  a.syndrome = kAckSyndrome;
  a.msn = msn_ & kPsnMask;
  port_.send(a);
  ++port_.stats.acks_sent;
}

}  // namespace mori::wire::rc
