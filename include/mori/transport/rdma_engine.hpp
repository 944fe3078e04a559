// RdmaEngine<Provider>: the IBGDA queue protocol over one RdmaEndpoint, written once for every
// provider (docs/rdma-engine.md, "The engine"). The provider encodes bytes; the engine owns the
// shared indices and the concurrency: reserve, flow control, write, submit in posting order, ring,
// poll, quiet, fence, and the ibuf slots that fetched values land in. The transport built on it
// (transport/rdma.hpp) turns device API calls into work requests.
//
// Signalling is selective: only the last WQE of each batch asks for a completion. Every provider's
// completions are cumulative (a CQE for WQE n completes every WQE before it on the QP: mlx5's
// wqe_counter, BNXT's con_indx, Ionic's msn), and every WQE is followed in its own batch by the
// signalled one, so any index a thread waits for is eventually covered. quiet's target (a batch
// end) is always a signalled WQE. An error completes with a CQE whether signalled or not. Every
// provider's CQ is a ring of at least sq_wqes entries, which flow control keeps from overflowing
// (at most sq_wqes - 1 WQEs, hence CQEs, are ever unconsumed).
//
// Outstanding WQEs are bounded by sq_wqes - 1 for every provider (Ionic's doorbell cannot tell a
// full ring from an empty one; mlx5's 16-bit wqe_counter needs fewer than 65536). So an SQ must be
// deeper than the largest batch, a full warp (64 lanes, 2 WQEs each for put-with-signal):
// sq_wqes >= 256 on the GPU. On the host backend a batch is one lane.
//
// The provider's hooks, note_wqe and prepare_submit, are part of the NicProvider concept
// (provider/concepts.hpp): every provider defines them, empty where it keeps no per-WQE state.
//
// The failure record: on an error completion or a timeout the engine passes DeviceError's qp,
// sq_posted (ep.submitted), sq_completed and cq_consumed (low 32 bits) to fail() with the code and
// the PE; fail() records the first failure only, all of its fields with one CAS.
#pragma once

#include <cstdint>

#include "mori/platform.hpp"
#include "mori/platform/path_mark.hpp"
#include "mori/provider/concepts.hpp"
#include "mori/provider/work_request.hpp"
#include "mori/state/access.hpp"
#include "mori/state/device_error.hpp"
#include "mori/state/rdma_endpoint.hpp"
#include "mori/state/spin.hpp"
#include "mori/transport/rdma_queue_note.hpp"

namespace mori::transport {

using state::RdmaEndpoint;

template <provider::NicProvider Provider>
struct RdmaEngine {
  using WorkRequest = provider::WorkRequest;
  using CqPoll = provider::CqPoll;
  using Opcode = provider::Opcode;

  // fence() marks ep.reserved with this bit; the next reservation consumes it (see fence()).
  static constexpr uint64_t kFenceNext = uint64_t{1} << 63;
  // The largest RDMA message: ConnectX devices report max_msg_sz = 1 GiB (ibv_query_device), under
  // the InfiniBand limit of 2^31 bytes; post_span splits a larger transfer.
  static constexpr uint64_t kMaxMessage = uint64_t{1} << 30;
  // A lane's WQEs of one post_span, counted at most to this (any batch above the SQ fails).
  static constexpr uint64_t kMaxSplit = uint64_t{1} << 16;

  // Posts `wr` (opcode, addresses, keys, bytes, operands; wr.fence may request a fence) on `ep`,
  // the QP to PE `pe` (used in failure messages only). Every active lane may call it at once: the
  // lanes post as one batch of consecutive WQEs. Returns this lane's SQ index. On return the WQE is
  // announced to the NIC (not necessarily complete: see quiet()).
  MORI_DEVICE static uint64_t post(RdmaEndpoint& ep, const WorkRequest& wr, int pe = -1) {
    const WorkRequest one[1] = {wr};
    return post_n(ep, one, pe);
  }

  // Posts K consecutive WQEs per lane (put-with-signal: the data, then the signal), the active
  // lanes on one endpoint as one batch, so nothing of another thread falls between a lane's K.
  // Returns the SQ index of this lane's first.
  //
  // The lanes of a wavefront may post to different endpoints at once (a thread-scope put from each
  // lane to another PE): each endpoint's lanes form their own batch (lanes_on), with its own leader
  // and last lane. A batch never mixes endpoints, as its reservation, indices and doorbell are one
  // QP's. With kAwait it returns once the batch is complete (a blocking put-with-signal; `call`
  // names it in a timeout message), as post_span does.
  template <uint32_t K, bool kAwait = false>
  MORI_DEVICE static uint64_t post_n(RdmaEndpoint& ep, const WorkRequest (&wrs)[K], int pe = -1,
                                     const char* call = nullptr) {
    return post_batch<K, kAwait>(
        ep, false, [] { return K; }, pe,
        [&](const Slots& at) {
          void* wqe = nullptr;
          for (uint32_t k = 0; k < K; ++k) wqe = write_at(ep, wrs[k], at, k, pe);
          return wqe;
        },
        call);
  }

  // Posts `wr`, a write or a read whose local_addr and remote_addr are its start, over `bytes`
  // bytes (wr.bytes is ignored): one WQE, or, above kMax (the largest message), consecutive WQEs
  // of kMax bytes and the rest, in this lane's part of the batch. Returns the SQ index of this
  // lane's first. A put's one post site: splitting by posting again, in a loop around post(),
  // would inline the engine twice. With kAwait it
  // returns once the batch is complete (a blocking put or get; `call` names it in a timeout
  // message): the QP completes in order, so everything it took before the batch is complete.
  template <uint64_t kMax = kMaxMessage, bool kAwait = false>
  MORI_DEVICE static uint64_t post_span(RdmaEndpoint& ep, const WorkRequest& wr, uint64_t bytes,
                                        int pe = -1, const char* call = nullptr) {
    // The WQE count of a split lane, clamped far above any SQ so that a batch's sum cannot wrap
    // (such a batch fails to fit).
    auto wqes = [&] {
      const uint64_t n = (bytes - 1) / kMax + 1;
      return static_cast<uint32_t>(n < kMaxSplit ? n : kMaxSplit);
    };
    return post_batch<1, kAwait>(
        ep, bytes > kMax, wqes, pe,
        [&](const Slots& at) {
          void* wqe = nullptr;
          uint32_t k = 0;
          uint64_t done = 0;
          do {  // at least one WQE: no path through the code skips the write
            WorkRequest part = wr;
            part.bytes = static_cast<uint32_t>(bytes - done < kMax ? bytes - done : kMax);
            part.local_addr += done;
            part.remote_addr += done;
            wqe = write_at(ep, part, at, k++, pe);
            done += kMax;
          } while (done < bytes);
          return wqe;
        },
        call);
  }

  // A batch's positions, for lanes that post different numbers of WQEs: lane l of `active` posts
  // count_of(l); this lane (`lane`) starts at *rank, after the lower lanes', and the batch holds
  // *count. The lanes of one endpoint run it in step (they share `active`).
  template <typename CountOf>
  MORI_DEVICE static void positions(uint64_t active, int lane, CountOf&& count_of, uint32_t* rank,
                                    uint32_t* count) {
    *rank = 0;
    *count = 0;
    for (uint64_t m = active; m != 0; m &= m - 1) {
      const int l = __builtin_ctzll(m);
      const uint32_t n = count_of(l);
      *rank += l < lane ? n : 0;
      *count += n;
    }
  }

  // The active lanes whose `ep` is this lane's: one round per distinct endpoint, in which the
  // lowest lane not yet grouped names the next one. One round when all post on one endpoint, and
  // always on the host backend, where a call's active lanes are the calling lane alone.
  MORI_DEVICE static uint64_t lanes_on(const RdmaEndpoint& ep) {
    const uint64_t mine = reinterpret_cast<uintptr_t>(&ep);
    uint64_t group = 0;
    for (uint64_t todo = platform::active_mask(); todo != 0;) {
      const uint64_t next = platform::broadcast(mine, __builtin_ctzll(todo));
      const uint64_t same = platform::ballot(mine == next);
      if (mine == next) group = same;
      todo &= ~same;
    }
    return group;
  }

  // Posts `wr`, whose result the NIC writes to local memory (a read of at most 8 bytes, a
  // fetch-add, a compare-swap), with its landing place an ibuf slot; waits for its completion and
  // returns the slot's 8 bytes. Slots are handed out by ticket; a slot's next user waits until
  // the previous one has read it out, so a slot is never overwritten while still unread.
  MORI_DEVICE static uint64_t fetch(RdmaEndpoint& ep, WorkRequest wr, int pe = -1) {
    using platform::MemOrder, platform::MemScope;
    const uint64_t ticket =
        platform::atomic_fetch_add<MemOrder::Relaxed, MemScope::System>(&ep.ibuf_next, uint64_t{1});
    const uint64_t slot = ticket & (ep.ibuf_slots - 1);
    uint64_t* gate = ep.ibuf + state::ibuf_tickets(ep.ibuf_slots) + slot;
    // Acquire: the previous user's read of the slot happened before we let the NIC overwrite it.
    state::spin_until(
        [&] { return platform::atomic_load<MemOrder::Acquire, MemScope::System>(gate) == ticket; },
        [&] { rdma_queue::time_out(ep, pe, "fetch (waiting for an ibuf slot)"); });
    wr.local_addr = reinterpret_cast<uint64_t>(ep.ibuf + slot);
    wr.lkey = ep.ibuf_lkey;
    // Posted and awaited in one wait loop (post_batch's kAwait).
    const WorkRequest one[1] = {wr};
    post_n<1, true>(ep, one, pe, "fetch");
    const uint64_t value =
        platform::atomic_load<MemOrder::Relaxed, MemScope::System>(ep.ibuf + slot);
    platform::atomic_store<MemOrder::Release, MemScope::System>(gate, ticket + ep.ibuf_slots);
    return value;
  }

  // Where the old value of an atomic nobody reads may land (wr.local_addr, wr.lkey).
  MORI_DEVICE static void discard_result(const RdmaEndpoint& ep, WorkRequest& wr) {
    wr.local_addr = reinterpret_cast<uint64_t>(ep.ibuf + state::ibuf_discard(ep.ibuf_slots));
    wr.lkey = ep.ibuf_lkey;
  }

  // Waits until WQEs [.., next) are complete; `call` names the waiter in a timeout message.
  MORI_DEVICE static void wait_complete(RdmaEndpoint& ep, uint64_t next, int pe, const char* call) {
    wait_completed(ep, pe, call, [next](uint64_t completed) { return completed >= next; });
  }

  // Waits until done(ep.completed), polling the CQ meanwhile; `call` names the waiter in a
  // timeout message.
  template <typename Done>
  MORI_DEVICE static void wait_completed(RdmaEndpoint& ep, int pe, const char* call, Done&& done) {
    using platform::MemOrder, platform::MemScope;
    auto seen = [&] {
      return done(platform::atomic_load<MemOrder::Acquire, MemScope::System>(&ep.completed));
    };
    state::spin_until(
        [&] {
          if (seen()) return true;
          poll(ep, pe);
          return seen();
        },
        [&] { rdma_queue::time_out(ep, pe, call); });
  }

  // Drains the CQ if no other thread is doing it: advances ep.completed. Returns whether it
  // advanced. An error completion fails (kCompletionError) with the decoded status.
  MORI_DEVICE static bool poll(RdmaEndpoint& ep, int pe = -1) {
    using platform::MemOrder, platform::MemScope;
    // Test before the CAS: waiters re-read ep.completed instead of contending for the line.
    if (platform::atomic_load<MemOrder::Relaxed, MemScope::System>(&ep.poll_lock) != 0)
      return false;
    // Acquire: pairs with the unlock's release, so this holder reads the ep.completed and
    // ep.cq_consumed the previous holder wrote (poll_cq extends 16-bit counters from them; a stale
    // value would misplace the window).
    if (platform::atomic_compare_swap<MemOrder::Acquire, MemScope::System>(&ep.poll_lock, 0u, 1u) !=
        0)
      return false;
    const CqPoll p = Provider::poll_cq(ep);
    if (p.error) {
      // ep.completed does not advance over an error, even to the successes this poll saw before
      // it: a quiet() in another thread that read the advanced value before this thread's trap
      // would return as if the failed WQE had succeeded. The lock is held until the record is
      // written, then released before the trap, so that the other waiters are not left spinning
      // on it: the trap ends the kernel (on the host backend, the launch). Held that long, the
      // record names this CQE and not a flush behind it that a waiter polled first.
      // An error CQE names the failed WQE: completed_through is one past it, and the WQEs before
      // it completed. A flush may name none (Ionic's): completed_through stays where it was.
      const uint64_t failed = p.completed_through - 1;
      const uint64_t through = p.completed_through > rdma_queue::load(&ep.completed)
                                   ? failed
                                   : rdma_queue::kFromEndpoint;
      const state::QueueNote q = rdma_queue::snapshot(ep, through);
      state::fail_in_line(
          {state::DeviceErrorCode::kCompletionError, pe, 0, p.status, true, q},
          [&](state::Message& m) {
            m << "RDMA " << Provider::kName << " error completion: " << p.status_text << " (status "
              << hex(p.status) << ") on ";
            if (through == rdma_queue::kFromEndpoint)
              m << "a WQE the CQE does not name, ";
            else
              m << "WQE " << failed << ", ";
            rdma_queue::describe(m, q, pe);
          },
          [&] { platform::atomic_store<MemOrder::Release, MemScope::System>(&ep.poll_lock, 0u); });
    }
    // Release: a thread that reads the new ep.completed with acquire also sees what the NIC wrote
    // before the CQE (poll_cq read the CQE with acquire): read data, old values of atomics.
    if (p.advanced)
      platform::atomic_store<MemOrder::Release, MemScope::System>(&ep.completed,
                                                                  p.completed_through);
    platform::atomic_store<MemOrder::Release, MemScope::System>(&ep.poll_lock, 0u);
    return p.advanced != 0;
  }

  // Waits until every WQE announced on `ep` so far is complete: those of this thread, and any
  // other thread's posted before this call. Fails on timeout (MORI_SHMEM_TIMEOUT_MS).
  MORI_DEVICE static void quiet(RdmaEndpoint& ep, int pe = -1) {
    using platform::MemOrder, platform::MemScope;
    // post() returns after its batch is submitted, so this thread's WQEs are below the target.
    const uint64_t target =
        platform::atomic_load<MemOrder::Acquire, MemScope::System>(&ep.submitted);
    MORI_PATH_MARK("rdma.quiet");
    wait_complete(ep, target, pe, "quiet");
  }

  // Orders this thread's later WQEs on `ep` after its earlier reads and atomics (writes after
  // writes are ordered anyway: every provider executes a QP's WQEs in order). It does not drain:
  // it marks the next reservation, whose first WQE then carries the provider's fence flag. Per QP
  // only: WQEs on different QPs are ordered only by quiet().
  //
  // Why the mark lives in ep.reserved (bit 63) rather than in a separate "fence next" word: the
  // fenced WQE must lie between this thread's earlier WQEs and its next one. A separate flag taken
  // by the next poster can be taken by a poster whose reservation comes after this thread's next
  // one (it reserved later but read the flag first), leaving that WQE unfenced. On ep.reserved,
  // the mark and the reservations share one modification order: this thread's earlier
  // reservations precede the mark (same location, program order), and the reservation that
  // consumes it, with the same CAS that clears it, is the very next one, at or before this
  // thread's next WQE. Two fences before one reservation merge into one, which serves both.
  MORI_DEVICE static void fence(RdmaEndpoint& ep) {
    using platform::MemOrder, platform::MemScope;
    platform::atomic_fetch_or<MemOrder::Relaxed, MemScope::System>(&ep.reserved, kFenceNext);
  }

 private:
  // Reserves `count` WQE indices, consuming a fence mark. Returns the base index, with kFenceNext
  // set when the batch consumed a mark. A CAS loop rather than a fetch_add: the reservation that
  // sees the mark must be the one that clears it (a fetch_add followed by a separate clear could
  // clear a newer fence's mark, set in between).
  MORI_DEVICE static uint64_t reserve(RdmaEndpoint& ep, uint32_t count) {
    using platform::MemOrder, platform::MemScope;
    // Relaxed: the index only hands out slots; the WQE slot's reuse is ordered by flow control's
    // acquire of ep.completed, and the WQE's publication by submit's release.
    uint64_t old = platform::atomic_load<MemOrder::Relaxed, MemScope::System>(&ep.reserved);
    for (;;) {
      const uint64_t desired = (old & ~kFenceNext) + count;
      const uint64_t seen = platform::atomic_compare_swap<MemOrder::Relaxed, MemScope::System>(
          &ep.reserved, old, desired);
      if (seen == old) return old;
      old = seen;
    }
  }

  // Where a lane's WQEs go in its batch: the batch's first SQ index, this lane's first position in
  // it, the batch's size, and whether its first WQE carries a fence (fence()).
  struct Slots {
    uint64_t base;
    uint32_t rank, count;
    bool fence;
  };

  // The active lanes' batch on one endpoint: its leader (the lowest lane: it reserves, and waits
  // for room), its last lane (it submits: it holds the last WQE, which some providers' doorbells
  // copy), this lane's first position and the batch's size.
  struct Batch {
    int lane, leader, last;
    uint32_t rank, count;
  };

  // What a wait of post_batch waits for, in the lanes that wait: ep.completed + slack >= need.
  struct Room {
    bool waits;
    uint64_t need, slack;
  };

  // One batch on `ep`: the active lanes on it reserve their WQEs together, K each but where a
  // lane splits a message (`splits`: it posts wqes() instead), write_lane(slots) writes this
  // lane's and returns the last one written, and the batch's last lane submits. With kAwait, each
  // lane then waits until the batch is complete, `awaiting` naming it in a timeout message.
  // Returns this lane's first index. The phases, in order: lay_out, reserve, wait for room,
  // write_and_submit, and with kAwait wait for the batch.
  template <uint32_t K, bool kAwait = false, typename Wqes, typename WriteLane>
  MORI_DEVICE static uint64_t post_batch(RdmaEndpoint& ep, bool splits, Wqes&& wqes, int pe,
                                         WriteLane&& write_lane, const char* awaiting = nullptr) {
    const Batch b = lay_out<K>(ep, splits, wqes, pe);
    uint64_t reservation = 0;
    Room room = b.lane == b.leader ? reserve_room(ep, b.count, pe, &reservation) : Room{};
    // One wait, entered for flow control and, with kAwait, again for the completion: each wait
    // is an inlined CQ poll and timeout site, a quarter of a fetching atomic's code, so the loop
    // is kept rolled (docs/rdma-engine.md, "The engine"). Acquire (in wait_completed): the NIC
    // has finished reading the slot we are about to overwrite; without it our WQE stores could
    // overtake the completion we waited for. Polling meanwhile lets the queue wrap any number of
    // times. The sum cannot wrap, where completed >= need - slack needed a guard for a QP's first
    // WQEs.
    uint64_t first = 0;
    bool posted = false;
    MORI_NO_UNROLL
    do {
      if (room.waits)
        wait_completed(ep, pe, posted ? awaiting : "post (waiting for a free WQE)",
                       [=](uint64_t completed) { return completed + room.slack >= room.need; });
      if (posted) break;
      const Slots at =
          write_and_submit(ep, b, platform::shuffle(reservation, b.leader), write_lane, pe);
      first = at.base + at.rank;
      // (kAwait) the second pass: every lane waits until the batch is complete. Its last WQE is
      // the one signalled, so no lane's completes sooner; and the batch's end is the same for
      // every lane, where a lane's own end would hold a register through the WQE writes.
      posted = true;
      room = {true, at.base + at.count, 0};
    } while (kAwait);
    return first;
  }

  // Lay out: K WQEs per active lane on `ep`, in lane order; a batch where a lane splits a message
  // counts each lane's own (and is checked to fit here: reserve_room checks the others in checked
  // builds only).
  template <uint32_t K, typename Wqes>
  MORI_DEVICE static Batch lay_out(const RdmaEndpoint& ep, bool splits, Wqes&& wqes, int pe) {
    const uint64_t active = lanes_on(ep);
    Batch b;
    b.lane = platform::lane_id();
    b.leader = __builtin_ctzll(active);
    b.last = 63 - __builtin_clzll(active);
    b.count = K * static_cast<uint32_t>(__builtin_popcountll(active));
    b.rank =
        K * static_cast<uint32_t>(__builtin_popcountll(active & ((uint64_t{1} << b.lane) - 1)));
    if (platform::ballot(splits) != 0) [[unlikely]] {  // a lane splits (post_span)
      const uint32_t mine = splits ? wqes() : K;
      positions(
          active, b.lane, [&](int l) { return platform::shuffle(mine, l); }, &b.rank, &b.count);
      check_fits(ep, b.count, pe);
    }
    return b;
  }

  // Reserve (the batch's leader): `count` indices from ep.reserved into *reservation, and the room
  // flow control waits for: the batch's last WQE must fit in the ring, at most sq_wqes - 1
  // outstanding (see the top).
  MORI_DEVICE static Room reserve_room(RdmaEndpoint& ep, uint32_t count, int pe,
                                       uint64_t* reservation) {
    *reservation = reserve(ep, count);
    MORI_PATH_MARK("rdma.reserve");  // the batch leader's part (bench/isa_paths.txt)
    // Checked builds and the host backend only: on the GPU the runtime refuses SQs below 256
    // entries, and a wavefront's batch of post_n is at most 128 WQEs (a batch with a split
    // message is checked in lay_out).
    if constexpr (state::kDescribeFailures) check_fits(ep, count, pe);
    return {true, (*reservation & ~kFenceNext) + count, ep.sq_wqes - 1};
  }

  // Write and submit: this lane's WQEs at its slots of the batch reserved at `reservation`, the
  // fence bit on the batch's first WQE when the batch consumed a fence mark (the first WQE
  // reserved after the fence() call); then submit and ring, in posting order, by the batch's last
  // lane. Waiting per lane instead would deadlock a converged wavefront: lane i would spin on a
  // store of lane i - 1, which cannot run until lane i exits.
  template <typename WriteLane>
  MORI_DEVICE static Slots write_and_submit(RdmaEndpoint& ep, const Batch& b, uint64_t reservation,
                                            WriteLane&& write_lane, int pe) {
    const Slots at{reservation & ~kFenceNext, b.rank, b.count, (reservation & kFenceNext) != 0};
    void* wqe = write_lane(at);
    if (b.lane == b.last) submit(ep, at.base, at.base + b.count, wqe, pe);
    return at;
  }

  // Writes `wr` as this lane's k-th WQE of the batch `at`; returns its slot.
  MORI_DEVICE static void* write_at(RdmaEndpoint& ep, WorkRequest wr, const Slots& at, uint32_t k,
                                    int pe) {
    const uint32_t position = at.rank + k;
    wr.index = at.base + position;
    wr.qpn = ep.qpn;
    wr.sq_wqes = ep.sq_wqes;
    wr.signaled = position == at.count - 1 ? 1 : 0;  // the batch's last WQE (see the top)
    if (position == 0 && at.fence) wr.fence = 1;
    void* wqe = ep.sq + (wr.index & (ep.sq_wqes - 1)) * Provider::kWqeBytes;
    write(wqe, wr, ep, pe);
    Provider::note_wqe(ep, wr);
    return wqe;
  }

  // A batch must fit in the ring (flow control waits for room for all of it at once).
  MORI_DEVICE static void check_fits(const RdmaEndpoint& ep, uint32_t count, int pe) {
    const uint64_t outstanding = ep.sq_wqes - 1;  // the most flow control lets in flight
    if (count <= outstanding) [[likely]]
      return;
    state::fail({state::DeviceErrorCode::kBadArgument, pe, 0, count}, [&](state::Message& m) {
      m << "RDMA: a batch of " << count << " WQEs cannot fit in an SQ of " << ep.sq_wqes
        << " (at most " << outstanding << " outstanding; a message above " << kMaxMessage
        << " bytes is split)";
    });
  }

  MORI_DEVICE static void write(void* wqe, const WorkRequest& wr, RdmaEndpoint& ep, int pe) {
    const bool atomic = wr.opcode == Opcode::kFetchAdd || wr.opcode == Opcode::kCompareSwap;
    if (atomic && !Provider::kNativeAtomic32 && wr.width == 4) {
      state::fail({state::DeviceErrorCode::kBadArgument, pe, wr.remote_addr, 4},
                  [&](state::Message& m) {
                    m << "RDMA " << Provider::kName
                      << " has no 32-bit atomics (the transport emulates them), qp " << ep.qpn;
                  });
    }
    provider::post_wqe<Provider>(wqe, wr);
  }

  // Announces WQEs [base, next) once every earlier batch is announced. `last_wqe` is WQE next - 1.
  MORI_DEVICE static void submit(RdmaEndpoint& ep, uint64_t base, uint64_t next,
                                 const void* last_wqe, int pe) {
    using platform::MemOrder, platform::MemScope;
    // Acquire: pairs with the previous ringer's release of ep.submitted, so our doorbell is
    // ordered after its doorbell. Without it a doorbell announcing [.., next) could reach the NIC
    // before one announcing [.., base), and the older, smaller value would then win.
    state::spin_until(
        [&] {
          return platform::atomic_load<MemOrder::Acquire, MemScope::System>(&ep.submitted) == base;
        },
        [&] { rdma_queue::time_out(ep, pe, "post (waiting for earlier WQEs to be submitted)"); });
    // The batch's WQE bytes (and prepare_submit's) must reach memory before the doorbell tells
    // the NIC to fetch them (else the NIC may read a slot's previous pass): ring_doorbell releases
    // at system scope before its first store (provider/concepts.hpp), where a fence here as well
    // was a second L2 writeback in a row. The other lanes' WQEs: on amdgcn the batch is one
    // wavefront, whose stores that release's wait covers (one instruction stream); on the host
    // backend the batch is this lane alone.
    Provider::prepare_submit(ep, base, next);
    Provider::ring_doorbell(ep, next, last_wqe);  // the only doorbell call site
    MORI_PATH_MARK("rdma.doorbell");              // the end of a post, for every provider
    // Release: the next ringer's acquire orders its doorbell after ours (see above).
    platform::atomic_store<MemOrder::Release, MemScope::System>(&ep.submitted, next);
  }
};

}  // namespace mori::transport
