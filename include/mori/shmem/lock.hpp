// Distributed locks (OpenSHMEM 1.5 section 9.12): set_lock, test_lock and clear_lock on a symmetric
// `long` that every PE initialises to 0 and passes at the same address. Thread scope: each calling
// thread takes the lock for itself, so the threads of one PE contend with each other as with other
// PEs' threads.
//
//   set_lock(lock)     waits until the calling thread holds the lock
//   test_lock(lock)    takes the lock if nobody holds it or waits for it: 0 if taken, else 1
//                      (OpenSHMEM's values); never waits for another holder
//   clear_lock(lock)   quiet(), then releases the lock to the next waiter
//
// Design: a ticket lock, fair under contention. Only PE 0's copy of the word is used (the home):
// its high 32 bits are the next ticket to hand out and its low 32 bits the ticket being served.
// set_lock takes a ticket with one fetch-add of 2^32 and waits until the home serves it, so the
// lock is granted in the order the tickets were taken (FIFO) and no waiter can be overtaken.
// test_lock takes a ticket only with a compare-swap that expects "next == serving" (nobody holds
// or waits), so it never queues. clear_lock advances "serving" by one, modulo 2^32 within its half
// (at 2^32 - 1 it adds 1 - 2^32, so that no carry reaches the next ticket); only the holder writes
// that half, so it reads it first to find its own ticket. Both halves wrap, and tickets are only
// compared for equality, so a lock may be taken any number of times by fewer than 2^32 waiters at
// once. Every step is an AMO on the home (atomic.hpp), so the lock works over any transport: P2P
// atomics, or NIC atomics over RDMA, where a waiter polls the home with atomic fetches; where the
// home's NIC atomics are not atomic with P2P ones, the home's own steps go through its NIC too (the
// AMO table, docs/device-api.md "Atomicity across transports").
//
// Ordering: clear_lock first calls quiet(), so every put, AMO and signal the holder issued is
// complete and visible before the next holder can see the lock released (OpenSHMEM's rule).
// set_lock and a successful test_lock end with a system-scope acquire fence, so the new holder
// reads what the previous holder wrote before it released.
//
// Waits honour MORI_SHMEM_TIMEOUT_MS: past the deadline set_lock records, and traps with,
//   "set_lock timed out after 200 ms: lock 0x7f12... on PE 0 serves ticket 3, this thread holds
//    ticket 5 (next ticket 7)"
// (code kTimeout, the home PE, the lock's address, and the ticket served as the observed value).
//
// On the GPU the lanes of a wavefront run in lockstep: two lanes of one wavefront waiting for the
// same lock deadlock (the holder cannot leave the loop the other still spins in) until the
// timeout traps. Take a lock from one lane per wavefront (e.g. the leader of a Warp or Block, then
// a scope barrier). The host backend runs every lane as a thread of its own, where any number of
// lanes may contend.
#pragma once

#include <cstdint>

#include "mori/shmem/atomic.hpp"
#include "mori/shmem/order.hpp"
#include "mori/state/spin.hpp"

namespace mori::shmem {

namespace detail {

// The PE whose copy of the lock word holds the lock's state.
inline constexpr int kLockHome = 0;
// One ticket, in the word's high half.
inline constexpr uint64_t kLockTicket = uint64_t{1} << 32;

MORI_DEVICE uint64_t* lock_word(long* lock) { return reinterpret_cast<uint64_t*>(lock); }
MORI_DEVICE uint32_t lock_serving(uint64_t word) { return static_cast<uint32_t>(word); }
MORI_DEVICE uint32_t lock_next(uint64_t word) { return static_cast<uint32_t>(word >> 32); }

// Acquire: the new holder's reads come after everything the previous holder made visible (its
// quiet) before releasing.
MORI_DEVICE void lock_acquired() {
  platform::fence<platform::MemOrder::Acquire, platform::MemScope::System>();
}

}  // namespace detail

MORI_DEVICE void set_lock(long* lock) {
  uint64_t* word = detail::lock_word(lock);
  const uint64_t taken = atomic_fetch_add(word, detail::kLockTicket, detail::kLockHome);
  const uint32_t ticket = detail::lock_next(taken);
  uint64_t seen = taken;
  state::spin_until(
      [&] {
        if (detail::lock_serving(seen) == ticket) return true;
        seen = atomic_fetch(word, detail::kLockHome);
        return detail::lock_serving(seen) == ticket;
      },
      [&] {
        state::fail_in_line({state::DeviceErrorCode::kTimeout, detail::kLockHome,
                             reinterpret_cast<uint64_t>(lock), detail::lock_serving(seen)},
                            [&](state::Message& m) {
                              state::timeout_prefix(m, "set_lock");
                              m << "lock " << hex(lock) << " on PE " << detail::kLockHome
                                << " serves ticket " << detail::lock_serving(seen)
                                << ", this thread holds ticket " << ticket << " (next ticket "
                                << detail::lock_next(seen) << ")";
                            });
      });
  detail::lock_acquired();
}

MORI_DEVICE int test_lock(long* lock) {
  uint64_t* word = detail::lock_word(lock);
  const uint64_t seen = atomic_fetch(word, detail::kLockHome);
  if (detail::lock_next(seen) != detail::lock_serving(seen)) return 1;  // held, or waited for
  if (atomic_compare_swap(word, seen, seen + detail::kLockTicket, detail::kLockHome) != seen)
    return 1;  // another thread took the ticket first
  detail::lock_acquired();
  return 0;
}

MORI_DEVICE void clear_lock(long* lock) {
  uint64_t* word = detail::lock_word(lock);
  quiet();
  // The low half is this holder's ticket: nobody else writes it while the lock is held.
  const uint32_t mine = detail::lock_serving(atomic_fetch(word, detail::kLockHome));
  atomic_add(word, mine == UINT32_MAX ? uint64_t{1} - detail::kLockTicket : uint64_t{1},
             detail::kLockHome);
}

}  // namespace mori::shmem
