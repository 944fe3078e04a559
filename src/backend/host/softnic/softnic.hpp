// SoftNic: the software NIC core of the host backend (docs/rdma-engine.md, "The software NIC
// core"). One thread serves a set of queue pairs: it reads each doorbell through the provider's
// Codec, decodes the WQE bytes the engine wrote, checks keys, bounds and alignment against a
// registration table, executes the request on the target PE's memory (mapped into this process)
// and writes the completion in the provider's format.
//
// The runtime creates one per PE when PEs are reached over RDMA on the host backend
// (backend/host/softnic_network.cpp), with the tables built from the heaps' peer_base() mappings
// and the keys PEs derive in step; buffer_register updates them (set_memory).
//
// Error semantics, as an RC QP: the first failed request completes with its error status and puts
// the QP in the error state. Later WQEs of that QP are not executed. Those of later doorbells each
// complete with a flush error (CompletionStatus::kFlushed, the provider's "work request flushed"),
// signalled or not, as a real NIC flushes them, so a kernel that waits on the QP later (a new
// launch) fails at once with that status instead of timing out. Those announced by the failing
// doorbell are dropped without completions (a real NIC flushes them too; the engine stops at the
// error CQE, which comes first in the ring, either way).
//
// Fault injection (Faults, or MORI_SOFTNIC_FAULT, read by start()): comma-separated items
//   error:N      WQE N (SQ index, on every served QP) completes with CompletionStatus::kGeneral
//   drop:N       WQE N executes but writes no completion (a later completion still covers it:
//                completions are cumulative)
//   delay_ms:M   every newly announced doorbell is processed M ms late
// e.g. MORI_SOFTNIC_FAULT=error:12,delay_ms:5.
//
// Adversarial mode (SoftNicOptions::adversary, or MORI_SOFTNIC_ADVERSARIAL=1 with
// MORI_SOFTNIC_SEED): the NIC uses the freedoms the ordering rules leave it (adversary.hpp).
//
// On the wire (wire_queues.cpp): a served QP with wire attributes (ServedEndpoint::wire) reaches a
// PE of another node. Its WQEs, once decoded and checked locally, become requests of a RoCEv2 RC
// queue pair (wire/rc_qp.hpp) whose packets leave through SoftNicOptions::port; that QP's peer
// executes them on its own PE's memory and answers. Its completions are written in posting order
// as the requester retires them; the first error (a NAK, retry exhaustion) puts the QP in the
// error state and the requests behind it complete flushed, as on a NIC. The adversary and the
// fault injection's error/drop items do not apply to wire QPs: the network is their adversary.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backend/host/softnic/adversary.hpp"
#include "backend/host/softnic/codec.hpp"
#include "backend/host/softnic/pe_locks.hpp"
#include "backend/host/wire/rc_qp.hpp"
#include "mori/state/rdma_endpoint.hpp"
#include "mori/status.hpp"

namespace mori::softnic {

// A PE's registered memory as the NIC reaches it: [remote_base, +bytes) in that PE's own address
// space (what its WQEs' remote_addr name), either mapped in this process at `mapped` (the heap's
// peer_base(pe)) or, when `mapped` is null, private to process `pid` (a registered buffer), which
// the NIC reads and writes with process_vm_readv / process_vm_writev. Atomics on a pid-only region
// run under the target PE's lock (SoftNicOptions::private_locks, pe_locks.hpp); without locks they
// complete with a remote access error.
struct RemoteRegion {
  int pe;
  uint64_t remote_base;
  uint64_t bytes;
  uint32_t rkey;
  void* mapped;
  int pid = 0;
};

// This process's registered memory: WQEs' local_addr must fall in the region of their lkey.
struct LocalRegion {
  uint64_t base;
  uint64_t bytes;
  uint32_t lkey;
  bool remote = true;  // registered for remote access: a wire peer may name it by this key
  // A registered buffer: other PEs' NICs reach it through this process with a locked
  // read-modify-write (pe_locks.hpp), so the wire responder's atomics on it take that lock too.
  bool private_memory = false;
};

// True when [addr, addr + bytes) lies inside [base, base + size), without overflowing.
inline bool inside(uint64_t addr, uint64_t bytes, uint64_t base, uint64_t size) {
  return addr >= base && bytes <= size && addr - base <= size - bytes;
}

struct MemoryTable {
  std::vector<RemoteRegion> remote;
  std::vector<LocalRegion> local;
};

struct ServedEndpoint {
  state::RdmaEndpoint* ep;
  int target_pe;             // the PE whose memory this QP's remote addresses name
  uint32_t initial_psn = 0;  // the QP's initial send PSN (ibv_qp_attr::sq_psn at RTS), 24 bits
  // Set: the target PE is on another node, reached on the wire by a QP with these attributes
  // (its sq_psn is initial_psn).
  std::optional<wire::QpAttributes> wire;
};

// Where the wire QPs' datagrams leave and arrive (backend/host/softnic_network.cpp: an IpPort; a
// test: memory). send() drops what the network cannot take, as a switch would.
class WirePort : public wire::Link {
 public:
  // One waiting datagram into `buffer`: its size, or 0 when none is waiting. Never blocks.
  virtual size_t receive(std::span<uint8_t> buffer) = 0;
  // A descriptor that polls readable when a datagram waits (the idle NIC sleeps on it); -1: none.
  virtual int fd() const { return -1; }
};

struct Faults {
  static constexpr uint64_t kNever = ~uint64_t{0};
  uint64_t error_at = kNever;  // SQ index that completes with kGeneral
  uint64_t drop_at = kNever;   // SQ index whose completion is not written
  uint32_t delay_ms = 0;       // added before each newly announced doorbell is processed
};

// Parses MORI_SOFTNIC_FAULT's syntax (see above) into *faults, keeping the fields it does not name.
Status parse_faults(std::string_view text, Faults* faults);

struct SoftNicOptions {
  Faults faults;
  bool read_env = true;        // start() merges MORI_SOFTNIC_FAULT into `faults`, and
                               // MORI_SOFTNIC_ADVERSARIAL / MORI_SOFTNIC_SEED into `adversary`
  AdversaryOptions adversary;  // off unless adversary.on
  uint64_t nic_id = 0;         // told apart in the adversary's seeds (the runtime: the PE)
  uint32_t spin_rounds = 64;   // idle rounds that only yield before the NIC starts sleeping
  uint32_t max_sleep_us = 50;  // the idle backoff's ceiling: the doorbell-to-execution latency
  std::string log_prefix;      // non-empty: a QP entering the error state is logged to stderr
                               // as one line, "<prefix>qp <n>: WQE <i>: <why>"
  const PeLocks* private_locks = nullptr;  // atomics on registered buffers; must outlive the NIC
  // False: a NIC that reports atomic_cap IBV_ATOMIC_NONE, which fails every atomic WQE.
  bool atomics = true;
  WirePort* port = nullptr;  // the wire QPs' port; must outlive the NIC
  int pe = 0;                // this NIC's PE: the wire responder locks private_locks' entry of it
  // Set: called on the NIC thread with each WQE that decoded and passed its QP's checks, before it
  // executes (`endpoint`: its place in the served list). What a WQE asked for beyond the data it
  // moves (its fence flag, the QP it names) leaves no trace in memory; a test reads it here.
  std::function<void(size_t endpoint, uint64_t index, const provider::WorkRequest& wr)> on_wqe;
};

class SoftNic {
 public:
  SoftNic(const Codec& codec, std::vector<ServedEndpoint> endpoints, MemoryTable memory,
          SoftNicOptions options = {});
  ~SoftNic();
  SoftNic(const SoftNic&) = delete;
  SoftNic& operator=(const SoftNic&) = delete;

  // Starts the NIC thread; fails (without starting) on a malformed MORI_SOFTNIC_FAULT.
  Status start();
  // Joins the NIC thread. Idempotent.
  void stop();

  // Replaces the registration tables (buffer_register / buffer_deregister). Requests after the
  // call see the new tables.
  void set_memory(MemoryTable memory);
  // Waits until every WQE announced so far on every served QP has been processed (or its QP is in
  // the error state), for at most `timeout`. Returns whether it got there.
  bool drain(std::chrono::milliseconds timeout);

  // Why endpoint i's QP entered the error state ("" while it has not), e.g.
  // "WQE 3: rkey 0x99 not registered for PE 1".
  std::string qp_error(size_t i) const;
  // WQEs executed so far (all endpoints), for tests and diagnostics.
  uint64_t executed() const { return executed_.load(std::memory_order_relaxed); }
  // Endpoint i's send PSN count (Codec::check_sequence), which a test compares with the engine's
  // own count (BNXT's ep.provider_state); read after stop().
  uint32_t next_psn(size_t i) const { return queues_[i].next_psn; }
  // What the adversarial mode did so far (read after stop(), or as a racy snapshot).
  AdversaryStats adversary_stats() const;
  // Endpoint i's wire QP counters (zero for a QP that is not on the wire); read after stop().
  wire::QpStats wire_stats(size_t i) const;
  // Datagrams the port delivered that no served wire QP is addressed by (read after stop()).
  uint64_t wire_unclaimed() const { return wire_unclaimed_; }

 private:
  // A served QP. Its cursor (adversary.hpp): the next SQ index to process, the codec's last
  // answer, and whether the QP is in the error state.
  struct Queue : QueueCursor {
    ServedEndpoint served{};
    uint64_t cq_produced = 0;
    uint32_t next_psn = 0;  // the NIC's send PSN count (Codec::check_sequence)
    std::string error;      // guarded by mutex_
    // On the wire: the RC QP, and the WQEs posted to it and not yet completed, in order. A WQE
    // that fails a local check waits in local_error until those before it complete.
    std::unique_ptr<wire::RcQp> rc;
    struct Posted {
      provider::WorkRequest wr;
      uint64_t old = 0;          // an atomic's result, landed as the provider lands it
      uint8_t inline_data[256];  // an inline write's bytes, kept for retransmission
    };
    std::deque<Posted> on_wire;
    struct LocalError {
      uint64_t index;
      provider::WorkRequest wr;
      CompletionStatus status;
      std::string why;
    };
    std::optional<LocalError> local_error;
  };
  // The wire responder's view of this PE's memory: the local regions open to remote access.
  class Responder final : public wire::ResponderMemory {
   public:
    explicit Responder(const SoftNic& nic) : nic_(nic) {}
    uint8_t* resolve(uint32_t rkey, uint64_t addr, uint64_t bytes, std::string* why) override;
    bool begin_atomic(const uint8_t* at, std::string* why) override;
    void end_atomic(const uint8_t* at) override;

   private:
    const SoftNic& nic_;
    bool locked_ = false;  // between begin_atomic and end_atomic: the PE's lock is held
  };
  // What the adversary drives (adversary.hpp): the plain NIC's steps on queues_[qp].
  class AdversaryPort final : public AdversaryNic {
   public:
    explicit AdversaryPort(SoftNic& nic) : nic_(nic) {}
    uint64_t doorbell(size_t qp, uint64_t seen) override;
    CompletionStatus decode(size_t qp, uint64_t index, provider::WorkRequest* wr,
                            std::string* why) override;
    CompletionStatus execute(size_t qp, const provider::WorkRequest& wr, uint64_t* old,
                             RemoteSpan* remote, std::string* why) override;
    bool place(const RemoteSpan& remote, void* local, uint64_t bytes, bool to_remote,
               std::string* why) override;
    void land(const provider::WorkRequest& wr, uint64_t old) override;
    void complete(size_t qp, const provider::WorkRequest& wr, CompletionStatus status,
                  const std::string& why) override;

   private:
    SoftNic& nic_;
  };

  void run();
  bool service(Queue& q);
  bool flush(Queue& q);
  // The wire (wire_queues.cpp): one wire QP's doorbells and completions, and the port's datagrams.
  bool service_wire(Queue& q, Clock::time_point now);
  bool post_wire(Queue& q, Clock::time_point now);
  bool complete_wire(Queue& q);
  bool receive_wire(Clock::time_point now);
  // MORI_SOFTNIC_WIRE_STATS set: one line per wire QP at stop(), its counters (wire/rc_qp.hpp).
  void log_wire_stats() const;
  void wait_for_wire(uint32_t us);
  // A decoded WQE as the wire QP's request, after the local checks a NIC makes before sending.
  CompletionStatus wire_request(Queue::Posted& posted, wire::Request* request, std::string* why);
  // Decodes WQE `index` and checks what the NIC checks before executing it (its QP, the PSN
  // sequence, an injected error). On failure returns the status and says why.
  CompletionStatus decode_checked(Queue& q, uint64_t index, provider::WorkRequest* wr,
                                  std::string* why);
  // Completes WQE `index` with `status`, puts the QP in the error state and records why.
  void fail_queue(Queue& q, uint64_t index, provider::WorkRequest wr, CompletionStatus status,
                  const std::string& why);
  CompletionStatus execute(const Queue& q, const provider::WorkRequest& wr, std::string* why);
  // A write's or read's checks: its keys and ranges. *remote: where its remote range lives.
  CompletionStatus check_rdma(const Queue& q, const provider::WorkRequest& wr, RemoteSpan* remote,
                              std::string* why);
  // An atomic at the responder: checks, then the operation; *old: the value before it.
  CompletionStatus remote_atomic_op(const Queue& q, const provider::WorkRequest& wr, uint64_t* old,
                                    std::string* why);
  // An atomic's old value lands at wr.local_addr, in the bytes the NIC writes.
  void land_atomic_result(const provider::WorkRequest& wr, uint64_t old) const;

  // A decoded request's turn at the responder: an atomic executes (*old: the value before it), a
  // write or read is checked (*remote: where its remote range lives), any other opcode is refused.
  // execute() and the adversary then move the data.
  CompletionStatus begin(const Queue& q, const provider::WorkRequest& wr, uint64_t* old,
                         RemoteSpan* remote, std::string* why);
  // WQE `index` succeeded: its CQE when signalled (and not dropped by the fault injection).
  void complete_success(Queue& q, uint64_t index, const provider::WorkRequest& wr);
  bool translate_remote(int pe, uint32_t rkey, uint64_t addr, uint64_t bytes, RemoteSpan* out,
                        std::string* why) const;
  bool copy_remote(const RemoteSpan& remote, void* local, uint64_t bytes, bool to_remote,
                   std::string* why) const;
  bool private_atomic(int pe, const RemoteSpan& remote, const provider::WorkRequest& wr,
                      uint64_t* old, std::string* why) const;
  bool local_ok(uint32_t lkey, uint64_t addr, uint64_t bytes, std::string* why) const;

  const Codec& codec_;
  std::vector<Queue> queues_;
  std::unordered_map<uint32_t, size_t> wire_queues_;  // a wire QP's number -> its queue
  Responder responder_{*this};
  uint64_t wire_unclaimed_ = 0;
  MemoryTable memory_;
  SoftNicOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> executed_{0};
  mutable std::mutex mutex_;         // guards the queues' error texts
  mutable std::mutex memory_mutex_;  // guards memory_
  // Per queue: WQEs processed so far, kBroken once the QP is in the error state (read by drain).
  static constexpr uint64_t kBroken = ~uint64_t{0};
  std::vector<std::atomic<uint64_t>> processed_;
  // Adversarial mode: the scheduler (made by start()) and what it drives.
  std::unique_ptr<Adversary> adversary_;
  AdversaryPort adversary_port_{*this};
  std::thread thread_;
};

}  // namespace mori::softnic
