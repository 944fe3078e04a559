// doctest main for tests run under mpirun: MPI is initialised before the tests and finalised after.
// Only rank 0 prints doctest's summary.
//
// Fast failure: the first failed check on any rank prints one line naming the rank, the test case,
// the place and the expression, and ends the whole job with MPI_Abort. A rank that failed would
// otherwise go on, and its partners could wait for it in MPI or in a device wait until the ctest
// timeout (mpi.fast_failure.np2 proves the job ends in seconds).
//
// Nodes as network namespaces (scripts/netns.sh, tests/netns): with MORI_TEST_NETNS=<prefix> set,
// each rank enters node rank / MORI_TEST_PES_PER_NODE (default 2) before any test runs, so that
// mori sees separate hosts whose software NICs reach each other only over the namespaces' wire.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "../netns/join.hpp"

namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// A doctest listener: runs before the reporters (which would print the failure after it), so it
// prints the failure itself.
struct AbortOnFailure : doctest::IReporter {
  explicit AbortOnFailure(const doctest::ContextOptions&) {}

  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override { test_case_ = tc.m_name; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException& e) override {
    // SIGTERM is mpirun ending this rank because another one aborted: not a failure of its own.
    if (std::strncmp(e.error_string.c_str(), "SIGTERM", 7) == 0) return;
    abort_job(e.is_crash ? "crash" : "exception", e.error_string.c_str(), "", nullptr, 0);
  }
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& a) override {
    if (!a.m_failed) return;
    abort_job(doctest::assertString(a.m_at), a.m_expr, a.m_decomp.c_str(), a.m_file, a.m_line);
  }
  void log_message(const doctest::MessageData& m) override {
    if (m.m_severity & doctest::assertType::is_warn) return;  // WARN/MESSAGE: not failures
    abort_job("FAIL", m.m_string.c_str(), "", m.m_file, m.m_line);
  }
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  void abort_job(const char* kind, const char* what, const char* values, const char* file,
                 int line) {
    static std::mutex once;  // one line, even when lane threads fail together
    std::lock_guard<std::mutex> lock(once);
    std::fprintf(stderr, "mpi test: rank %d: %s FAILED in \"%s\" at %s:%d: %s%s%s\n", world_rank(),
                 kind, test_case_ ? test_case_ : "?", file ? file : "?", line, what,
                 *values ? " with " : "", values);
    std::fflush(stderr);
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  const char* test_case_ = nullptr;
};

[[noreturn]] void netns_abort(int rank, const std::string& cause) {
  std::fprintf(stderr, "mpi test: rank %d: netns hook: %s\n", rank, cause.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; the compiler does not know it
}

// MORI_TEST_NETNS=<prefix>: this rank becomes a PE of its node (tests/netns/join.hpp).
void enter_netns(int rank) {
  std::string why;
  if (!mori::netns::join(rank, &why)) netns_abort(rank, why);
}

}  // namespace

DOCTEST_REGISTER_LISTENER("mpi_abort_on_failure", 1, AbortOnFailure);

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int rank = world_rank();
  enter_netns(rank);
  doctest::Context context(argc, argv);
  if (rank != 0) context.setOption("minimal", true);
  const int failed = context.run();
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return failed ? failed : any_failed;
}
