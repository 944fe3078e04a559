// moe_example: expert-parallel dispatch and combine, both modes, checked on every PE.
//
//   mpirun -np 2 build/examples/moe/moe_example [tokens hidden experts topk [fp8]]
//
// Every PE makes its tokens and top-k routing, dispatches them (normal mode, then low latency),
// applies its experts, combines, and checks what it received and the combined output against the
// host reference. One line per PE and mode: "moe_example: PE 0 of 2: normal bf16: dispatch ok,
// combine ok (256 tokens, 164 received)". Exit 1 on any difference.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "checks.hpp"

namespace {

// Both modes once, each checked; returns 1 if any check failed.
int run(const moe::Shape& s, const std::vector<moe::Inputs>& all) {
  moe::Moe m(s, moe::kBoth);
  if (!m.error().empty()) {
    std::fprintf(stderr, "moe_example: %s\n", m.error().c_str());
    return 1;
  }
  m.set_inputs(all[s.me]);
  const moe::Launch l{0, 16, 16};
  int failed = 0;
  for (bool ll : {false, true}) {
    m.poison();
    mori::shmem::barrier_all();
    mori::Status st = ll ? m.run_ll_dispatch(1, l) : m.run_normal_dispatch(1, l);
    const std::string dispatch = !st.ok() ? st.message()
                                 : ll     ? moe::check_ll_dispatch(m, all)
                                          : moe::check_normal_dispatch(m, all);
    if (st.ok()) st = ll ? m.run_ll_expert(l) : m.run_normal_expert(l);
    if (st.ok()) st = ll ? m.run_ll_combine(1, l) : m.run_normal_combine(1, l);
    const std::string combine = !st.ok() ? st.message() : moe::check_out(m, all[s.me], ll);
    int received = 0;
    for (int src = 0; src < s.npes; ++src)
      for (int el = 0; el < (ll ? s.experts : 1); ++el)
        received += ll ? m.buffers().ll_count[el * s.npes + src] : m.buffers().recv_count[src];
    std::printf(
        "moe_example: PE %d of %d: %s %s: dispatch %s, combine %s (%d tokens, %d %s received)\n",
        s.me, s.npes, ll ? "low-latency" : "normal", s.format == moe::Format::kFp8 ? "fp8" : "bf16",
        dispatch.empty() ? "ok" : dispatch.c_str(), combine.empty() ? "ok" : combine.c_str(),
        s.capacity, received, ll ? "records" : "tokens");
    failed |= !dispatch.empty() || !combine.empty();
    mori::shmem::barrier_all();
  }
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("MORI_SHMEM_HEAP_SIZE", "512M", 0);
  if (mori::shmem::init() != 0) {
    std::fprintf(stderr, "moe_example: %s\n", mori::shmem::last_error());
    return 1;
  }
  moe::Shape s;
  s.capacity = argc > 1 ? std::atoi(argv[1]) : 256;
  s.hidden = argc > 2 ? std::atoi(argv[2]) : 1024;
  s.experts = argc > 3 ? std::atoi(argv[3]) : 4;
  s.topk = argc > 4 ? std::atoi(argv[4]) : 4;
  s.format = argc > 5 && std::string(argv[5]) == "fp8" ? moe::Format::kFp8 : moe::Format::kBf16;
  s.npes = mori::shmem::n_pes();
  s.me = mori::shmem::my_pe();
  if (std::string e = moe::routing_error(s, moe::Routing::kUniform);
      !e.empty() || s.capacity < 1 || s.hidden < 1) {
    std::fprintf(stderr, "moe_example: %s\n",
                 e.empty() ? "tokens and hidden must be positive" : e.c_str());
    return 1;
  }
  std::vector<moe::Inputs> all;
  for (int pe = 0; pe < s.npes; ++pe)
    all.push_back(moe::make_inputs(s, pe, s.capacity, moe::Routing::kUniform, 1));

  const int failed = run(s, all);
  mori::shmem::finalize();
  return failed;
}
