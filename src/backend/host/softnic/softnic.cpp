// The software NIC core: the thread that turns doorbells into executed requests and completions
// (softnic.hpp for the contract, docs/rdma-engine.md for the design).
#include "backend/host/softnic/softnic.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "runtime/hex.hpp"

namespace mori::softnic {
namespace {

using provider::Opcode;
using provider::WorkRequest;

using runtime::hex;

// The NIC executes a remote atomic as one indivisible operation on the responder's memory; the
// mapping is shared with the target PE's own threads, which use atomics on the same words.
template <typename T>
T remote_atomic(void* remote, const WorkRequest& wr) {
  std::atomic_ref<T> word(*static_cast<T*>(remote));
  if (wr.opcode == Opcode::kFetchAdd) return word.fetch_add(static_cast<T>(wr.operand));
  T expected = static_cast<T>(wr.compare);
  word.compare_exchange_strong(expected, static_cast<T>(wr.operand));
  return expected;  // the old value, whether or not the swap happened
}

}  // namespace

Status parse_faults(std::string_view text, Faults* faults) {
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t colon = item.find(':');
    const std::string_view key = item.substr(0, colon);
    const std::string_view value =
        colon == std::string_view::npos ? std::string_view{} : item.substr(colon + 1);
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (colon == std::string_view::npos || value.empty() || ec != std::errc{} ||
        end != value.data() + value.size()) {
      return Status::error("MORI_SOFTNIC_FAULT: \"" + std::string(item) +
                           "\" is not <kind>:<number> (error:N, drop:N, delay_ms:M)");
    }
    if (key == "error") {
      faults->error_at = n;
    } else if (key == "drop") {
      faults->drop_at = n;
    } else if (key == "delay_ms" && n <= 60'000) {
      faults->delay_ms = static_cast<uint32_t>(n);
    } else {
      return Status::error("MORI_SOFTNIC_FAULT: unknown or out-of-range item \"" +
                           std::string(item) + "\" (error:N, drop:N, delay_ms:M up to 60000)");
    }
  }
  return {};
}

SoftNic::SoftNic(const Codec& codec, std::vector<ServedEndpoint> endpoints, MemoryTable memory,
                 SoftNicOptions options)
    : codec_(codec), memory_(std::move(memory)), options_(options), processed_(endpoints.size()) {
  queues_.reserve(endpoints.size());
  for (const ServedEndpoint& e : endpoints) {
    Queue& q = queues_.emplace_back();
    q.served = e;
    q.next_psn = e.initial_psn & 0xFFFFFF;
    if (e.wire && options_.port) {
      q.rc = wire::RcQp::create(*e.wire, responder_, *options_.port);
      wire_queues_[e.wire->qp_num & 0xFFFFFF] = queues_.size() - 1;
    }
  }
}

SoftNic::~SoftNic() { stop(); }

Status SoftNic::start() {
  if (thread_.joinable()) return {};
  if (options_.read_env) {
    if (const char* env = std::getenv("MORI_SOFTNIC_FAULT"); env != nullptr && *env != 0) {
      if (Status s = parse_faults(env, &options_.faults); !s.ok()) return s;
    }
    if (Status s = parse_adversary(std::getenv("MORI_SOFTNIC_ADVERSARIAL"),
                                   std::getenv("MORI_SOFTNIC_SEED"), &options_.adversary);
        !s.ok())
      return s;
  }
  for (const Queue& q : queues_)
    if (q.served.wire && !q.rc)
      return Status::error("software NIC: qp " + std::to_string(q.served.ep->qpn) +
                           " is on the wire but the NIC has no port");
  if (options_.adversary.on && !adversary_)
    adversary_ = std::make_unique<Adversary>(options_.adversary, queues_.size(), options_.nic_id,
                                             options_.faults.delay_ms);
  stop_.store(false, std::memory_order_relaxed);
  thread_ = std::thread([this] { run(); });
  return {};
}

void SoftNic::stop() {
  stop_.store(true, std::memory_order_relaxed);
  if (!thread_.joinable()) return;
  thread_.join();
  if (std::getenv("MORI_SOFTNIC_WIRE_STATS")) log_wire_stats();
}

void SoftNic::set_memory(MemoryTable memory) {
  std::lock_guard<std::mutex> lock(memory_mutex_);
  memory_ = std::move(memory);
}

bool SoftNic::drain(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (size_t i = 0; i < queues_.size(); ++i) {
    // ep.submitted: the engine's announced index (release-stored after each doorbell).
    const uint64_t target =
        std::atomic_ref<uint64_t>(queues_[i].served.ep->submitted).load(std::memory_order_acquire);
    for (;;) {
      const uint64_t done = processed_[i].load(std::memory_order_acquire);
      if (done == kBroken || done >= target) break;
      if (!thread_.joinable() || std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return true;
}

std::string SoftNic::qp_error(size_t i) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return i < queues_.size() ? queues_[i].error : std::string{};
}

// Round-robin over the queues. Idle, it yields for a while (a doorbell usually follows the last
// one closely), then sleeps with a doubling backoff capped at max_sleep_us: the host backend
// shares two cores with every lane thread, so an idle NIC must not hold one.
void SoftNic::run() {
  uint32_t idle = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    bool progress = false;
    bool waiting = false;  // some QP has timed adversarial work
    const Clock::time_point now = Clock::now();
    progress |= receive_wire(now);
    for (size_t i = 0; i < queues_.size(); ++i) {
      Queue& q = queues_[i];
      if (q.rc) {
        progress |= service_wire(q, now);
        const uint64_t done = q.on_wire.empty() ? q.next : q.on_wire.front().wr.index;
        processed_[i].store(q.broken ? kBroken : done, std::memory_order_release);
        continue;
      }
      if (!adversary_ || q.broken) {
        progress |= service(q);
        processed_[i].store(q.broken ? kBroken : q.next, std::memory_order_release);
        continue;
      }
      progress |= adversary_->service(adversary_port_, i, q);
      waiting |= adversary_->waiting(i, q);
      processed_[i].store(q.broken ? kBroken : adversary_->first_unfinished(i, q),
                          std::memory_order_release);
    }
    if (progress || waiting) {  // timed adversarial work: microseconds, too short to sleep
      if (!progress) std::this_thread::yield();
      idle = 0;
    } else if (idle < options_.spin_rounds) {
      ++idle;
      std::this_thread::yield();
    } else {
      const uint32_t shift = std::min<uint32_t>(idle - options_.spin_rounds, 16);
      const uint32_t us = std::min<uint32_t>(uint32_t{1} << shift, options_.max_sleep_us);
      ++idle;
      if (options_.port)
        wait_for_wire(std::max<uint32_t>(us, 1));
      else
        std::this_thread::sleep_for(std::chrono::microseconds(std::max<uint32_t>(us, 1)));
    }
  }
}

// Processes every WQE announced on q since the last call, in order. Returns whether it did work.
bool SoftNic::service(Queue& q) {
  if (q.broken) return flush(q);
  state::RdmaEndpoint& ep = *q.served.ep;
  const uint64_t announced = codec_.announced(ep, q.announced);
  if (announced == q.announced) return false;
  q.announced = announced;
  if (options_.faults.delay_ms != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.faults.delay_ms));
  for (; q.next < announced; ++q.next) {
    const uint64_t index = q.next;
    WorkRequest wr{};
    std::string why;
    CompletionStatus status = decode_checked(q, index, &wr, &why);
    if (status == CompletionStatus::kSuccess) status = execute(q, wr, &why);
    if (status != CompletionStatus::kSuccess) {
      fail_queue(q, index, wr, status, why);
      return true;
    }
    executed_.fetch_add(1, std::memory_order_relaxed);
    complete_success(q, index, wr);
  }
  return true;
}

void SoftNic::complete_success(Queue& q, uint64_t index, const WorkRequest& wr) {
  if (wr.signaled && index != options_.faults.drop_at)
    codec_.complete(*q.served.ep, &q.cq_produced, index, wr, CompletionStatus::kSuccess);
}

CompletionStatus SoftNic::decode_checked(Queue& q, uint64_t index, WorkRequest* wr,
                                         std::string* why) {
  const state::RdmaEndpoint& ep = *q.served.ep;
  const uint8_t* wqe = ep.sq + (index & (ep.sq_wqes - 1)) * codec_.wqe_bytes;
  if (!codec_.decode(wqe, index, wr, why)) return CompletionStatus::kRemoteInvalidRequest;
  if (wr->qpn != 0 && (wr->qpn & 0xffffff) != (ep.qpn & 0xffffff)) {
    // Only mlx5's WQE names its QP; a WQE for another QP is garbage on this one.
    *why = "WQE names qp " + std::to_string(wr->qpn) + ", not " + std::to_string(ep.qpn);
    return CompletionStatus::kRemoteInvalidRequest;
  }
  if (codec_.check_sequence && !codec_.check_sequence(ep, index, *wr, &q.next_psn, why))
    return CompletionStatus::kGeneral;  // the NIC's own sequence disagrees: a driver bug
  if (index == options_.faults.error_at) {
    *why = "injected error (MORI_SOFTNIC_FAULT error:" + std::to_string(index) + ")";
    return CompletionStatus::kGeneral;
  }
  if (options_.on_wqe) options_.on_wqe(static_cast<size_t>(&q - queues_.data()), index, *wr);
  return CompletionStatus::kSuccess;
}

void SoftNic::fail_queue(Queue& q, uint64_t index, WorkRequest wr, CompletionStatus status,
                         const std::string& why) {
  state::RdmaEndpoint& ep = *q.served.ep;
  // The error CQE names this WQE; a decode failure has no trustworthy fields, so the codec gets
  // the index and whatever decode filled in (opcode defaults to a write).
  wr.index = index;
  codec_.complete(ep, &q.cq_produced, index, wr, status);
  q.broken = true;
  // The WQEs announced with this one are dropped without completions, and flush() completes
  // those of later doorbells (softnic.hpp).
  q.next = q.announced;
  std::lock_guard<std::mutex> lock(mutex_);
  q.error = "WQE " + std::to_string(index) + ": " + why;
  if (!options_.log_prefix.empty())
    std::fprintf(stderr, "%sqp %u: %s\n", options_.log_prefix.c_str(), ep.qpn, q.error.c_str());
}

// A QP in the error state executes nothing more, and completes every WQE of a later doorbell with
// a flush error, signalled or not (IBTA 11.6.2; ibv_poll_cq(3), IBV_WC_WR_FLUSH_ERR): so a later
// wait on the QP fails at once instead of waiting for its deadline.
bool SoftNic::flush(Queue& q) {
  state::RdmaEndpoint& ep = *q.served.ep;
  const uint64_t announced = codec_.announced(ep, q.announced);
  q.announced = announced;
  if (q.next >= announced) return false;
  for (; q.next < announced; ++q.next) {
    WorkRequest wr{};
    std::string why;
    const uint8_t* wqe = ep.sq + (q.next & (ep.sq_wqes - 1)) * codec_.wqe_bytes;
    codec_.decode(wqe, q.next, &wr, &why);  // the CQE's opcode, where the bytes give one
    wr.index = q.next;
    codec_.complete(ep, &q.cq_produced, q.next, wr, CompletionStatus::kFlushed);
  }
  return true;
}

bool SoftNic::translate_remote(int pe, uint32_t rkey, uint64_t addr, uint64_t bytes,
                               RemoteSpan* out, std::string* why) const {
  for (const RemoteRegion& r : memory_.remote) {
    if (r.pe != pe || r.rkey != rkey) continue;
    if (!inside(addr, bytes, r.remote_base, r.bytes)) {
      *why = "remote range " + hex(addr) + " + " + std::to_string(bytes) + " outside rkey " +
             hex(rkey) + "'s region " + hex(r.remote_base) + " + " + std::to_string(r.bytes);
      return false;
    }
    out->pid = r.pid;
    out->addr = addr;
    out->mapped = r.mapped ? static_cast<uint8_t*>(r.mapped) + (addr - r.remote_base) : nullptr;
    return true;
  }
  *why = "rkey " + hex(rkey) + " not registered for PE " + std::to_string(pe);
  return false;
}

// An atomic on a registered buffer of process remote.pid: read, operate and write back under the
// target PE's lock (pe_locks.hpp says what that makes atomic). *old is the value read.
bool SoftNic::private_atomic(int pe, const RemoteSpan& remote, const WorkRequest& wr, uint64_t* old,
                             std::string* why) const {
  if (options_.private_locks == nullptr) {
    *why = "atomic on PE " + std::to_string(pe) +
           "'s registered buffer, which this software NIC has no lock for";
    return false;
  }
  if (!options_.private_locks->lock(pe, why)) return false;
  uint64_t word = 0;  // the low wr.width bytes, host order
  bool ok = copy_remote(remote, &word, wr.width, false, why);
  if (ok) {
    const uint64_t mask = wr.width == 8 ? ~uint64_t{0} : 0xffffffffu;
    *old = word;
    const bool write = wr.opcode == Opcode::kFetchAdd || word == (wr.compare & mask);
    word = wr.opcode == Opcode::kFetchAdd ? (word + wr.operand) & mask : wr.operand & mask;
    if (write) ok = copy_remote(remote, &word, wr.width, true, why);
  }
  options_.private_locks->unlock(pe);
  return ok;
}

// Moves `bytes` between local memory and `remote` (to_remote: a write).
bool SoftNic::copy_remote(const RemoteSpan& remote, void* local, uint64_t bytes, bool to_remote,
                          std::string* why) const {
  if (remote.mapped) {
    if (to_remote)
      std::memmove(remote.mapped, local, bytes);
    else
      std::memmove(local, remote.mapped, bytes);
    return true;
  }
  const iovec mine{local, bytes};
  const iovec theirs{reinterpret_cast<void*>(remote.addr), bytes};
  const ssize_t n = to_remote ? process_vm_writev(remote.pid, &mine, 1, &theirs, 1, 0)
                              : process_vm_readv(remote.pid, &mine, 1, &theirs, 1, 0);
  if (n == static_cast<ssize_t>(bytes)) return true;
  *why = std::string(to_remote ? "process_vm_writev" : "process_vm_readv") + " to pid " +
         std::to_string(remote.pid) + " failed: " + (n < 0 ? std::strerror(errno) : "short copy");
  return false;
}

// One key may cover several regions (the runtime registers every QP's ibuf under one key).
bool SoftNic::local_ok(uint32_t lkey, uint64_t addr, uint64_t bytes, std::string* why) const {
  bool known = false;
  for (const LocalRegion& r : memory_.local) {
    if (r.lkey != lkey) continue;
    if (inside(addr, bytes, r.base, r.bytes)) return true;
    known = true;
  }
  *why = known ? "local range " + hex(addr) + " + " + std::to_string(bytes) + " outside lkey " +
                     hex(lkey) + "'s regions"
               : "lkey " + hex(lkey) + " not registered";
  return false;
}

CompletionStatus SoftNic::check_rdma(const Queue& q, const WorkRequest& wr, RemoteSpan* remote,
                                     std::string* why) {
  const int pe = q.served.target_pe;
  if (wr.opcode == Opcode::kWriteInline) {
    if (wr.bytes > 256) {  // the codecs reject longer inline data; never overrun
      *why = "inline write of " + std::to_string(wr.bytes) + " bytes";
      return CompletionStatus::kLocalLength;
    }
  } else {
    // A zero-length RDMA request moves nothing and checks no key (IBTA 9.4.3, 9.4.4).
    if (wr.bytes == 0) return CompletionStatus::kSuccess;
    if (!local_ok(wr.lkey, wr.local_addr, wr.bytes, why)) return CompletionStatus::kLocalProtection;
  }
  std::lock_guard<std::mutex> lock(memory_mutex_);
  return translate_remote(pe, wr.rkey, wr.remote_addr, wr.bytes, remote, why)
             ? CompletionStatus::kSuccess
             : CompletionStatus::kRemoteAccess;
}

CompletionStatus SoftNic::remote_atomic_op(const Queue& q, const WorkRequest& wr, uint64_t* old,
                                           std::string* why) {
  const int pe = q.served.target_pe;
  if (!options_.atomics) {
    *why = "atomic on a NIC that reports atomic_cap IBV_ATOMIC_NONE";
    return CompletionStatus::kRemoteInvalidRequest;
  }
  if (wr.width != 4 && wr.width != 8) {
    *why = "atomic of width " + std::to_string(wr.width);
    return CompletionStatus::kRemoteInvalidRequest;
  }
  if (wr.remote_addr % wr.width != 0) {
    *why = "misaligned " + std::to_string(wr.width) + "-byte atomic at " + hex(wr.remote_addr);
    return CompletionStatus::kRemoteInvalidRequest;
  }
  if (!local_ok(wr.lkey, wr.local_addr, wr.width, why)) return CompletionStatus::kLocalProtection;
  RemoteSpan remote;
  {
    std::lock_guard<std::mutex> lock(memory_mutex_);
    if (!translate_remote(pe, wr.rkey, wr.remote_addr, wr.width, &remote, why))
      return CompletionStatus::kRemoteAccess;
  }
  if (remote.mapped == nullptr)
    return private_atomic(pe, remote, wr, old, why) ? CompletionStatus::kSuccess
                                                    : CompletionStatus::kRemoteAccess;
  // std::atomic_ref needs the mapping aligned too (a region mapped at an odd offset).
  if (reinterpret_cast<uintptr_t>(remote.mapped) % wr.width != 0) {
    *why = "atomic target " + hex(wr.remote_addr) + " misaligned in this process's mapping";
    return CompletionStatus::kRemoteInvalidRequest;
  }
  *old = wr.width == 8 ? remote_atomic<uint64_t>(remote.mapped, wr)
                       : remote_atomic<uint32_t>(remote.mapped, wr);
  return CompletionStatus::kSuccess;
}

void SoftNic::land_atomic_result(const WorkRequest& wr, uint64_t old) const {
  if (wr.width == 8) {
    std::memcpy(reinterpret_cast<void*>(wr.local_addr), &old, 8);  // host order
    return;
  }
  uint32_t old32 = static_cast<uint32_t>(old);
  if (codec_.result32_big_endian) old32 = __builtin_bswap32(old32);  // as the NIC lands them
  std::memcpy(reinterpret_cast<void*>(wr.local_addr), &old32, 4);
}

// Checks and performs one decoded request. The checks come in the order a NIC meets them: the
// request's form, the local key (the requester's own DMA), then the remote key (the responder's).
CompletionStatus SoftNic::execute(const Queue& q, const WorkRequest& wr, std::string* why) {
  uint64_t old = 0;
  RemoteSpan remote;
  const CompletionStatus status = begin(q, wr, &old, &remote, why);
  if (status != CompletionStatus::kSuccess) return status;
  if (is_atomic(wr)) {
    land_atomic_result(wr, old);
    return status;
  }
  if (wr.bytes == 0) return status;
  void* local = const_cast<void*>(wr.opcode == Opcode::kWriteInline
                                      ? wr.inline_data
                                      : reinterpret_cast<const void*>(wr.local_addr));
  uint8_t data[256];
  if (wr.opcode == Opcode::kWriteInline) {  // copied out of the WQE: process_vm_writev wants a
    std::memcpy(data, wr.inline_data, wr.bytes);  // mutable iovec
    local = data;
  }
  return copy_remote(remote, local, wr.bytes, wr.opcode != Opcode::kRead, why)
             ? CompletionStatus::kSuccess
             : CompletionStatus::kRemoteAccess;
}

CompletionStatus SoftNic::begin(const Queue& q, const WorkRequest& wr, uint64_t* old,
                                RemoteSpan* remote, std::string* why) {
  if (is_atomic(wr)) return remote_atomic_op(q, wr, old, why);
  if (is_write(wr) || wr.opcode == Opcode::kRead) return check_rdma(q, wr, remote, why);
  *why = "opcode " + std::to_string(static_cast<unsigned>(wr.opcode)) + " not executed";
  return CompletionStatus::kRemoteInvalidRequest;
}

}  // namespace mori::softnic
