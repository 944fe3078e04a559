// The doorbell page of the emulated Thor2. On hardware it is MMIO: every 64-bit write libbnxt_re
// makes to it (db.c bnxt_re_ring_db) is a separate message to the chip. Here one page serves every
// QP and CQ of a context, as on hardware, so a plain memory page would keep only the last write and
// lose an SQ doorbell that a CQ doorbell overwrote before the NIC looked. The page is therefore
// mapped read-only; each write faults, and the fault handler (bnxt_doorbell.cpp) decodes the store,
// routes an SQ doorbell to its QP's cell and steps over the instruction.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mori::emulated_kernel::bnxt {

// A doorbell page of `bytes`: anonymous, read-only, watched. nullptr with errno on failure.
void* map_doorbell_page(size_t bytes);
// Stops watching a page (the library unmaps it itself: bnxt_re_free_context).
void forget_doorbell_page(void* page);

// The last SQ doorbell rung for QP `qpn` in this process (its 64-bit value; 0 before the first),
// which the NIC reads. reset_sq_doorbell clears it when the QP is created.
uint64_t* sq_doorbell(uint32_t qpn);
void reset_sq_doorbell(uint32_t qpn);

}  // namespace mori::emulated_kernel::bnxt
