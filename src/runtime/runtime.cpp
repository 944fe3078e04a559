#include "runtime/runtime.hpp"

#include <cstdio>

#include "runtime/abort_report.hpp"
#include "runtime/backend.hpp"
#include "runtime/error.hpp"

namespace mori::runtime {

namespace {
std::unique_ptr<Runtime>& slot() {
  static std::unique_ptr<Runtime> rt;
  return rt;
}
}  // namespace

std::mutex& api_mutex() {
  static std::mutex mu;
  return mu;
}
Runtime* current() { return slot().get(); }

// The abort report (abort_report.hpp) lives as long as the runtime whose record it reads.
void set_current(std::unique_ptr<Runtime> rt) {
  if (rt && rt->error && backend::device_failure_aborts()) {
    if (Status s = install_abort_report(rt->error); !s.ok())
      std::fprintf(stderr, "mori: init: device errors will not be printed at abort: %s\n",
                   s.message().c_str());
  }
  slot() = std::move(rt);
}
std::unique_ptr<Runtime> take_current() {
  remove_abort_report();
  return std::move(slot());
}

Runtime* require(const char* api) {
  Runtime* rt = current();
  if (!rt) report(api, "not initialised (call init or init_attr first)");
  return rt;
}

Runtime* require_device(const char* api) {
  Runtime* rt = require(api);
  if (!rt) return nullptr;
  if (Status s = backend::use_device(); !s.ok()) {
    report(api, s);
    return nullptr;
  }
  return rt;
}

DeviceArray::~DeviceArray() {
  if (ptr) backend::free_device(ptr);
}

Status DeviceArray::upload(const void* data, size_t bytes) {
  if (ptr) backend::free_device(ptr);
  ptr = nullptr;
  MORI_TRY(backend::alloc_device(bytes, &ptr));
  return backend::copy_to_device(ptr, data, bytes);
}

Status Runtime::publish() {
  const size_t n = static_cast<size_t>(n_pes);
  // The device's table carries each RDMA PE's NIC family (state::transport_entry).
  std::vector<uint8_t> entries(n);
  const state::Nic nic = rdma ? rdma->nic() : state::Nic::kNone;
  for (size_t pe = 0; pe < n; ++pe)
    entries[pe] = state::transport_entry(static_cast<state::Transport>(transports[pe]), nic);
  MORI_TRY(d_transports.upload(entries.data(), n * sizeof(uint8_t)));
  for (size_t pe = 0; pe < n && amo_transports.size() == n; ++pe)
    entries[pe] = state::transport_entry(static_cast<state::Transport>(amo_transports[pe]), nic);
  MORI_TRY(d_amo_transports.upload(entries.data(), n * sizeof(uint8_t)));
  // The heap first: the device finds it at regions[-1] (state/gpu_states.hpp).
  std::vector<state::RegisteredRegion> table;
  const auto add = [&](Region& r) -> Status {
    MORI_TRY(r.d_peer_bases.upload(r.peer_bases.data(), n * sizeof(uint64_t)));
    MORI_TRY(r.d_remote_bases.upload(r.remote_bases.data(), n * sizeof(uint64_t)));
    MORI_TRY(r.d_rkeys.upload(r.rkeys.data(), n * sizeof(uint32_t)));
    table.push_back({r.base, r.size, static_cast<const uint64_t*>(r.d_peer_bases.ptr),
                     static_cast<const uint64_t*>(r.d_remote_bases.ptr),
                     static_cast<const uint32_t*>(r.d_rkeys.ptr), r.lkey, 0});
    return {};
  };
  MORI_TRY(add(heap));
  for (auto& [base, r] : regions) MORI_TRY(add(*r));
  MORI_TRY(d_regions.upload(table.data(), table.size() * sizeof(state::RegisteredRegion)));

  state::GpuStates s{};
  s.abi_version = state::kGpuStatesAbiVersion;
  s.struct_bytes = sizeof(state::GpuStates);
  s.rank = rank;
  s.n_pes = n_pes;
  s.num_qp_per_pe = settings.num_qp_per_pe;
  s.heap_base = heap.base;
  s.heap_size = heap.size;
  s.transports = static_cast<const uint8_t*>(d_transports.ptr);
  s.amo_transports = static_cast<const uint8_t*>(d_amo_transports.ptr);
  s.flags = state_flags;
  s.regions = static_cast<const state::RegisteredRegion*>(d_regions.ptr) + 1;
  s.n_regions = static_cast<int32_t>(table.size() - 1);
  s.internal = reinterpret_cast<uint64_t*>(memory->base() + internal_offset);
  s.internal_bytes = kInternalBytes;
  s.error = error;
  s.timeout_ticks = settings.timeout_ms * 1000000ull / platform::kClockTickNs;
  s.teams = static_cast<const state::TeamDescriptor*>(d_teams.ptr);
  s.max_teams = static_cast<int32_t>(teams.size());
  s.team_scratch = reinterpret_cast<uint8_t*>(memory->base() + team_scratch_offset);
  s.team_scratch_bytes = settings.team_scratch;
  s.contexts = contexts.get();
  if (rdma) {
    s.rdma_endpoints = rdma->device_endpoints();
    s.nic = static_cast<uint8_t>(rdma->nic());
  }
  states = s;

  MORI_TRY(backend::publish(states));
  for (void* m : modules) MORI_TRY(backend::publish_to_module(m, states));
  return {};
}

}  // namespace mori::runtime
