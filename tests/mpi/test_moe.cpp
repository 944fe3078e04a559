// The MoE dispatch and combine of examples/moe, both modes, on every PE against the host
// reference: every byte each PE received (payload, fp8 scale, routing, the slot after the last one
// still poisoned) and every element of the combined output. Routing uniform, skewed (every token to
// PE 0) and empty (the last PE receives nothing); k from 1 to 8; bf16 and fp8; token counts that
// differ per PE; launch geometries whose loops stride; and both modes' buffers reused over many
// iterations with no barrier between them. Over P2P, over each NIC family, and mixed (ctest
// variants, tests/mpi/CMakeLists.txt).
#include <string>
#include <vector>

#include "checks.hpp"
#include "device_harness.hpp"

using namespace mori::test;
namespace shmem = mori::shmem;

namespace {

// A test's shape (its tokens, npes and me are the session's) and how it is run.
struct Case {
  moe::Shape shape{.capacity = 40, .hidden = 96, .experts = 4, .topk = 4};
  moe::Routing routing = moe::Routing::kUniform;
  bool uneven = true;
  moe::Launch launch{0, 16, 8};
};

moe::Shape shape_of(const Case& c, const Session& s) {
  moe::Shape sh = c.shape;
  sh.npes = s.n;
  sh.me = s.me;
  return sh;
}

std::vector<moe::Inputs> inputs(const Case& c, const moe::Shape& sh, uint32_t seed) {
  std::vector<moe::Inputs> all;
  for (int pe = 0; pe < sh.npes; ++pe)
    all.push_back(
        moe::make_inputs(sh, pe, moe::tokens_on(sh.capacity, pe, c.uneven), c.routing, seed));
  return all;
}

// Whether this PE loads d's memory, so that the combines leave d's outputs in place (the driver's
// table of d's signal word is null otherwise).
bool loads(const moe::Buffers& b, bool ll, int d) {
  return (ll ? b.ll_comb_sig_at[d] : b.comb_sig_at[d]) != nullptr;
}

std::string label(const Case& c, bool ll, int iteration) {
  return std::string(ll ? "low latency" : "normal") +
         (c.shape.format == moe::Format::kFp8 ? " fp8" : " bf16") + ", " +
         moe::routing_name(c.routing) + ", k " + std::to_string(c.shape.topk) + ", iteration " +
         std::to_string(iteration);
}

// Dispatch, expert and combine `iterations` times on one set of buffers, new inputs each time,
// checking every iteration. The receive regions are poisoned once, before the first: later
// iterations run back to back, as users run them, and stale data shows as a wrong record.
void run(const Session& s, const Case& c, bool ll, int iterations = 1) {
  const moe::Shape sh = shape_of(c, s);
  REQUIRE_MESSAGE(moe::routing_error(sh, c.routing).empty(), moe::routing_error(sh, c.routing));
  moe::Moe m(sh, ll ? moe::kLowLatency : moe::kNormal);
  REQUIRE_MESSAGE(m.error().empty(), m.error());
  m.poison();
  REQUIRE(shmem::barrier_all() == 0);
  for (int it = 1; it <= iterations; ++it) {
    const std::vector<moe::Inputs> all = inputs(c, sh, uint32_t(it * 7919 + sh.topk));
    m.set_inputs(all[s.me]);
    const uint32_t epoch = uint32_t(it);
    mori::Status st =
        ll ? m.run_ll_dispatch(epoch, c.launch) : m.run_normal_dispatch(epoch, c.launch);
    REQUIRE_MESSAGE(st.ok(), st.message());
    // The guard slots are poisoned only before the first iteration; the checks of later ones see
    // whatever a longer earlier batch left there, so they check the records alone.
    std::string e = ll ? moe::check_ll_dispatch(m, all) : moe::check_normal_dispatch(m, all);
    if (it > 1 && e.find("was written") != std::string::npos) e.clear();
    CHECK_MESSAGE(e.empty(), label(c, ll, it) << ": " << e);
    st = ll ? m.run_ll_expert(c.launch) : m.run_normal_expert(c.launch);
    REQUIRE_MESSAGE(st.ok(), st.message());
    st = ll ? m.run_ll_combine(epoch, c.launch) : m.run_normal_combine(epoch, c.launch);
    REQUIRE_MESSAGE(st.ok(), st.message());
    e = moe::check_out(m, all[s.me], ll);
    if (it > 1 && e.find("was written") != std::string::npos) e.clear();
    CHECK_MESSAGE(e.empty(), label(c, ll, it) << ": " << e);
  }
  REQUIRE(shmem::barrier_all() == 0);
}

}  // namespace

TEST_CASE("both modes, bf16, uniform routing, k from 1 to 8") {
  Session s("256M");
  for (int k = 1; k <= moe::kMaxTopk; ++k) {
    Case c;
    c.shape.topk = k;
    for (bool ll : {false, true}) run(s, c, ll);
  }
}

TEST_CASE("both modes, fp8 payloads with a scale per token") {
  Session s("256M");
  Case c;
  c.shape.format = moe::Format::kFp8;
  c.shape.topk = 3;
  for (bool ll : {false, true}) run(s, c, ll);
}

TEST_CASE("skewed routing: every token to PE 0") {
  Session s("256M");
  for (moe::Format f : {moe::Format::kBf16, moe::Format::kFp8}) {
    Case c;
    c.routing = moe::Routing::kSkewed;
    c.shape.format = f;
    for (bool ll : {false, true}) run(s, c, ll);
  }
}

TEST_CASE("empty routing: the last PE receives nothing") {
  Session s("256M");
  Case c;
  c.routing = moe::Routing::kEmpty;
  c.shape.topk = s.n > 2 ? 6 : 3;
  for (bool ll : {false, true}) run(s, c, ll);
}

TEST_CASE("launch geometries: fewer blocks than PEs, narrow warps, a partial last warp") {
  Session s("256M");
  for (moe::Launch l : {moe::Launch{1, 12, 8}, moe::Launch{3, 8, 4}, moe::Launch{2, 5, 2}}) {
    Case c;
    c.launch = l;
    c.shape.capacity = 33;
    for (bool ll : {false, true}) run(s, c, ll);
  }
}

TEST_CASE("hidden sizes whose rows end in a partial chunk and start unaligned") {
  // The combines sum 8-element chunks (examples/moe/chunk.hpp): 100 ends each row in 4 elements and
  // starts every other row 8 bytes past a 16-byte boundary; 13 ends it in 5 and starts rows at
  // every even offset.
  Session s("256M");
  for (int hidden : {100, 13}) {
    Case c;
    c.shape.hidden = hidden;
    c.shape.topk = 3;
    for (bool ll : {false, true}) run(s, c, ll);
  }
}

TEST_CASE("the buffers reused over many iterations with no barrier between them") {
  Session s("256M");
  Case c;
  c.shape.topk = 2;
  c.shape.capacity = 24;
  c.shape.hidden = 64;
  run(s, c, true, 24);
  run(s, c, false, 8);
}

// Over P2P (and from a PE to itself) the combines leave the outputs where the expert wrote them and
// the token's PE loads them there: no byte of its receive region for such a PE is written. From a
// PE only RDMA reaches, the outputs arrive in that region.
TEST_CASE("the combines move no data to a PE that loads the expert's memory") {
  Session s("256M");
  Case c;
  for (const bool ll : {false, true}) {
    const moe::Shape sh = shape_of(c, s);
    moe::Moe m(sh, ll ? moe::kLowLatency : moe::kNormal);
    REQUIRE_MESSAGE(m.error().empty(), m.error());
    m.poison();
    REQUIRE(shmem::barrier_all() == 0);
    const std::vector<moe::Inputs> all = inputs(c, sh, 11);
    m.set_inputs(all[s.me]);
    mori::Status st = ll ? m.run_ll_dispatch(1, c.launch) : m.run_normal_dispatch(1, c.launch);
    REQUIRE_MESSAGE(st.ok(), st.message());
    st = ll ? m.run_ll_expert(c.launch) : m.run_normal_expert(c.launch);
    REQUIRE_MESSAGE(st.ok(), st.message());
    st = ll ? m.run_ll_combine(1, c.launch) : m.run_normal_combine(1, c.launch);
    REQUIRE_MESSAGE(st.ok(), st.message());
    CHECK_MESSAGE(moe::check_out(m, all[s.me], ll).empty(), moe::check_out(m, all[s.me], ll));
    const moe::Buffers& b = m.buffers();
    CHECK(loads(b, ll, s.me));  // a PE always loads its own memory
    const size_t rows_per_pe = size_t(sh.capacity) * (ll ? sh.experts : 1), H = size_t(sh.hidden);
    for (int d = 0; d < s.n; ++d) {
      const uint8_t* region = reinterpret_cast<const uint8_t*>((ll ? b.ll_comb_recv : b.comb_recv) +
                                                               d * rows_per_pe * H);
      size_t written = 0;
      for (size_t i = 0; i < rows_per_pe * H * 2; ++i) written += region[i] != moe::kPoison;
      if (loads(b, ll, d))
        CHECK_MESSAGE(written == 0, (ll ? "low latency" : "normal")
                                        << ": PE " << d << " wrote " << written << " bytes");
      else
        CHECK_MESSAGE(written > 0, (ll ? "low latency" : "normal") << ": nothing from PE " << d);
    }
    REQUIRE(shmem::barrier_all() == 0);
  }
}

// PE 0 acts as if P2P did not reach PE 1 (which still loads PE 0's memory): PE 0 puts its
// outputs and expects PE 1's to arrive, PE 1 expects to load them; each combine traps with why,
// rather than summing rows nobody wrote. Any further PE agrees with both and combines as usual.
TEST_CASE("a combine whose PEs disagree on P2P traps with the reason") {
  Session s("256M");
  Case c;
  const moe::Shape sh = shape_of(c, s);
  for (const bool ll : {false, true}) {
    moe::Moe m(sh, ll ? moe::kLowLatency : moe::kNormal);
    REQUIRE_MESSAGE(m.error().empty(), m.error());
    const moe::Buffers& b = m.buffers();
    bool every_pe_loads = s.n > 1;  // the same on every PE: the transports are uniform
    for (int d = 0; d < s.n; ++d) every_pe_loads &= loads(b, ll, d);
    if (!every_pe_loads) {
      MESSAGE("not every PE is P2P-reachable here: the run over P2P has this case");
      REQUIRE(shmem::barrier_all() == 0);
      return;
    }
    if (s.me == 0) {
      (ll ? b.ll_comb_sig_at[1] : b.comb_sig_at[1]) = nullptr;
      const size_t rows = size_t(sh.capacity) * sh.hidden;
      if (ll)
        for (int el = 0; el < sh.experts; ++el)
          b.ll_comb_from[sh.experts + el] = b.ll_comb_recv + size_t(sh.experts + el) * rows;
      else
        b.comb_from[1] = b.comb_recv + rows;
    }
    m.poison();
    REQUIRE(shmem::barrier_all() == 0);
    const std::vector<moe::Inputs> all = inputs(c, sh, 5);
    m.set_inputs(all[s.me]);
    const moe::Launch one{1, 1, 1};  // one lane sends every signal before it waits for any
    mori::Status st = ll ? m.run_ll_dispatch(1, one) : m.run_normal_dispatch(1, one);
    REQUIRE_MESSAGE(st.ok(), st.message());
    st = ll ? m.run_ll_expert(one) : m.run_normal_expert(one);
    REQUIRE_MESSAGE(st.ok(), st.message());
    st = ll ? m.run_ll_combine(1, one) : m.run_normal_combine(1, one);
    if (s.me <= 1) {
      REQUIRE_FALSE(st.ok());
      const std::string want =
          s.me == 0 ? "moe combine: a source left its outputs in place, but this PE cannot load "
                      "its memory"
                    : "moe combine: a source put its outputs, but this PE loads them in place";
      CHECK_MESSAGE(st.message().find(want) != std::string::npos, st.message());
    } else {  // the others agree with both and combine as usual
      REQUIRE_MESSAGE(st.ok(), st.message());
      CHECK_MESSAGE(moe::check_out(m, all[s.me], ll).empty(), moe::check_out(m, all[s.me], ll));
    }
    REQUIRE(shmem::barrier_all() == 0);
  }
}

TEST_CASE("a launch larger than the buffers were made for fails with the reason") {
  Session s("256M");
  Case c;
  moe::Moe m(shape_of(c, s), moe::kNormal);
  REQUIRE_MESSAGE(m.error().empty(), m.error());
  const mori::Status st = m.run_normal_expert(moe::Launch{300, 64, 64});
  REQUIRE_FALSE(st.ok());
  CHECK(st.message() ==
        "moe: a launch of 300 warps of 64 threads exceeds the buffers' 256 warps or 1024 threads "
        "per block");
  CHECK(moe::routing_error(shape_of(Case{.shape{.topk = 9}}, s), moe::Routing::kUniform) ==
        "topk 9 is outside 1..8");
  REQUIRE(shmem::barrier_all() == 0);
}
