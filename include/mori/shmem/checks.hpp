// Argument checks of the device API. With MORI_DEVICE_CHECKS (the host backend and debug GPU
// builds) a bad PE, an address outside every symmetric memory, a size that overflows, or a stride
// below 1 traps with a message naming the call, the PE and the address. Release GPU builds compile
// the checks out and resolve addresses without them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mori/shmem/vocabulary.hpp"
#include "mori/state/address.hpp"
#include "mori/state/device_error.hpp"

namespace mori::shmem::detail {

MORI_DEVICE void check_pe(const char* call, int pe) {
  if constexpr (MORI_DEVICE_CHECKS) {
    if (pe < 0 || pe >= state::pe_count()) {
      state::fail({state::DeviceErrorCode::kBadPe, pe}, [&](state::Message& m) {
        m << call << ": PE " << pe << " is out of range [0, " << state::pe_count() << ")";
      });
    }
  }
}

// nelems * elem_bytes, checked for overflow (and for wrapping past the end of the address space at
// `addr`).
MORI_DEVICE uint64_t byte_count(const char* call, const void* addr, size_t nelems,
                                size_t elem_bytes, int pe) {
  const uint64_t bytes = static_cast<uint64_t>(nelems) * elem_bytes;
  if constexpr (MORI_DEVICE_CHECKS) {
    const uint64_t a = reinterpret_cast<uint64_t>(addr);
    if ((elem_bytes && bytes / elem_bytes != nelems) || a + bytes < a) {
      state::fail({state::DeviceErrorCode::kBadSize, pe, a}, [&](state::Message& m) {
        m << call << ": " << static_cast<uint64_t>(nelems) << " elements of "
          << static_cast<uint64_t>(elem_bytes) << " bytes at " << hex(a)
          << " overflow the address space (PE " << pe << ")";
      });
    }
  }
  return bytes;
}

// A strided call's stride `name` (dst or sst), which OpenSHMEM requires to be at least 1 element.
MORI_DEVICE void check_stride(const char* call, const char* name, ptrdiff_t stride, int pe) {
  if constexpr (MORI_DEVICE_CHECKS) {
    if (stride < 1) {
      state::fail({state::DeviceErrorCode::kBadArgument, pe, 0, static_cast<uint64_t>(stride)},
                  [&](state::Message& m) {
                    m << call << ": stride " << name << " = " << static_cast<int64_t>(stride)
                      << " is not positive: strides count elements, 1 or more (PE " << pe << ")";
                  });
    }
  }
}

// The bytes a strided array at `addr` spans, from its first element to the end of its last:
// (nelems - 1) * stride + 1 elements, none for nelems == 0; checked for overflow as byte_count.
MORI_DEVICE uint64_t strided_bytes(const char* call, const void* addr, size_t nelems, size_t stride,
                                   size_t elem_bytes, int pe) {
  if (nelems == 0) return 0;
  const uint64_t last = static_cast<uint64_t>(nelems - 1) * stride;
  if constexpr (MORI_DEVICE_CHECKS) {
    if (last / stride != nelems - 1 || last + 1 == 0) {
      const uint64_t a = reinterpret_cast<uint64_t>(addr);
      state::fail({state::DeviceErrorCode::kBadSize, pe, a}, [&](state::Message& m) {
        m << call << ": " << static_cast<uint64_t>(nelems) << " elements "
          << static_cast<uint64_t>(stride) << " apart at " << hex(a)
          << " overflow the address space (PE " << pe << ")";
      });
    }
  }
  return byte_count(call, addr, last + 1, elem_bytes, pe);
}

// Why [a, a + bytes) lies in no symmetric memory: it starts in the heap or in a registered buffer
// and runs past that memory's end, or it starts in none of them.
MORI_DEVICE void say_outside(state::Message& m, uint64_t a, uint64_t bytes) {
  const state::GpuStates& s = state::gpu_states();
  uint64_t base = s.heap_base, size = s.heap_size;
  int region = -1;
  bool starts_inside = a - base < size;
  for (int i = 0; i < s.n_regions && !starts_inside; ++i) {
    if (a - s.regions[i].base < s.regions[i].size) {
      starts_inside = true;
      region = i;
      base = s.regions[i].base;
      size = s.regions[i].size;
    }
  }
  if (!starts_inside) {
    m << " is neither in the symmetric heap [" << hex(s.heap_base) << ", +" << s.heap_size
      << ") nor in a registered buffer";
    return;
  }
  m << " runs " << (a + bytes - (base + size)) << " bytes past the end of ";
  if (region < 0)
    m << "the symmetric heap";
  else
    m << "registered buffer " << region;
  m << " [" << hex(base) << ", +" << size << ")";
}

// The symmetric location of [addr, addr + bytes) on PE `pe`. An empty range names no memory, so
// any address is accepted for it, null included (OpenSHMEM 1.5: a call that moves no data may
// pass any address): the transports move no bytes for it (RDMA posts no write for an empty put or
// get, and a put-with-signal's empty write carries no data, whose address the NIC does not check),
// and checked builds point it at the heap's start, so that nothing downstream sees a stray offset.
MORI_DEVICE state::RemoteTarget resolve(const char* call, const void* addr, uint64_t bytes, int pe,
                                        int qp) {
  check_pe(call, pe);
  state::RemoteTarget t{{-1, 0}, pe, qp};
  const uint64_t a = reinterpret_cast<uint64_t>(addr);
  if (!state::locate(a, bytes, &t.ref)) {
    if constexpr (MORI_DEVICE_CHECKS) {
      if (bytes == 0) {
        t.ref = {-1, 0};
        return t;
      }
      state::fail({state::DeviceErrorCode::kBadAddress, pe, a}, [&](state::Message& m) {
        m << call << ": address " << hex(a) << " (" << bytes << " bytes) for PE " << pe;
        say_outside(m, a, bytes);
      });
    }
    // Unchecked builds trust the caller: t.ref is the heap's reference (locate).
  }
  return t;
}

}  // namespace mori::shmem::detail
