// The MPI bootstrap: each collective is the MPI collective of the same name, on a private duplicate
// of the caller's communicator.
#include <mpi.h>

#include <climits>
#include <memory>
#include <string>

#include "bootstrap/bootstrap.hpp"

namespace mori::bootstrap {
namespace {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, length);
}

Status check(int code, const char* what) {
  if (code == MPI_SUCCESS) return {};
  return Status::error(std::string("bootstrap: ") + what + " failed: " + mpi_error_text(code));
}

// MPI counts are int; the bootstrap moves small records, so larger calls are refused rather than
// split.
Status check_count(size_t bytes, const char* what) {
  if (bytes <= static_cast<size_t>(INT_MAX)) return {};
  return Status::error(std::string("bootstrap: ") + what + " of " + std::to_string(bytes) +
                       " bytes per rank exceeds MPI's int count");
}

class MpiBootstrap final : public Bootstrap {
 public:
  MpiBootstrap(MPI_Comm comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  ~MpiBootstrap() override {
    // After MPI_Finalize the communicator is gone with MPI itself and must not be touched.
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status allgather(const void* send, void* recv, size_t bytes) override {
    MORI_TRY(check_count(bytes, "MPI_Allgather"));
    const int n = static_cast<int>(bytes);
    return check(MPI_Allgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_), "MPI_Allgather");
  }

  Status alltoall(const void* send, void* recv, size_t bytes) override {
    MORI_TRY(check_count(bytes, "MPI_Alltoall"));
    const int n = static_cast<int>(bytes);
    return check(MPI_Alltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_), "MPI_Alltoall");
  }

  Status barrier() override { return check(MPI_Barrier(comm_), "MPI_Barrier"); }

  Status broadcast(void* buf, size_t bytes, int root) override {
    if (root < 0 || root >= size_) {
      return Status::error("bootstrap: broadcast root " + std::to_string(root) +
                           " is out of range for size " + std::to_string(size_));
    }
    MORI_TRY(check_count(bytes, "MPI_Bcast"));
    return check(MPI_Bcast(buf, static_cast<int>(bytes), MPI_BYTE, root, comm_), "MPI_Bcast");
  }

  // MPI's own split: no sockets, and it works wherever MPI does (across nodes without
  // MORI_SOCKET_IFNAME).
  Status split(int color, int key, std::chrono::milliseconds,
               std::unique_ptr<Bootstrap>* out) override {
    out->reset();
    MPI_Comm comm = MPI_COMM_NULL;
    MORI_TRY(check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &comm),
                   "MPI_Comm_split"));
    if (comm == MPI_COMM_NULL) return {};
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    *out = std::make_unique<MpiBootstrap>(comm, rank, size);
    return {};
  }

 private:
  MPI_Comm comm_;
  int rank_, size_;
};

}  // namespace

Status make_mpi_bootstrap(const void* mpi_comm, std::unique_ptr<Bootstrap>* out) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    return Status::error(
        "bootstrap: MPI is not initialised (call MPI_Init before initialising mori with an MPI "
        "communicator)");
  }
  const MPI_Comm parent =
      mpi_comm != nullptr ? *static_cast<const MPI_Comm*>(mpi_comm) : MPI_COMM_WORLD;
  if (parent == MPI_COMM_NULL)
    return Status::error("bootstrap: the MPI communicator is MPI_COMM_NULL");
  MPI_Comm comm = MPI_COMM_NULL;
  MORI_TRY(check(MPI_Comm_dup(parent, &comm), "MPI_Comm_dup"));
  // Failures come back as codes (and so as a Status) instead of aborting the job.
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  *out = std::make_unique<MpiBootstrap>(comm, rank, size);
  return {};
}

}  // namespace mori::bootstrap
