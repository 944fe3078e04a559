#include "py_bootstrap.hpp"

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace py = pybind11;

namespace mori::python {

namespace {

// Calls channel.<op>(args...) and copies the bytes it returns (exactly `expect` of them) to `out`.
template <typename... Args>
Status exchange(const py::object& channel, const char* op, void* out, size_t expect,
                Args&&... args) {
  py::gil_scoped_acquire gil;
  try {
    py::object result = channel.attr(op)(std::forward<Args>(args)...);
    if (!out) return {};
    const std::string_view got = py::bytes(result);
    if (got.size() != expect) {
      return Status::error("bootstrap: " + std::string(op) + " returned " +
                           std::to_string(got.size()) + " bytes, expected " +
                           std::to_string(expect));
    }
    if (expect) std::memcpy(out, got.data(), expect);
    return {};
  } catch (const std::exception& e) {        // a Python exception, or a result that is not bytes
    const std::string_view what = e.what();  // "Type: message", then pybind11's traceback lines
    return Status::error("bootstrap: " + std::string(op) +
                         " failed: " + std::string(what.substr(0, what.find('\n'))));
  }
}

py::bytes as_bytes(const void* data, size_t bytes) {
  return py::bytes(static_cast<const char*>(data), bytes);
}

}  // namespace

PyBootstrap::PyBootstrap(py::object channel, int rank, int size)
    : channel_(std::move(channel)), rank_(rank), size_(size) {}

PyBootstrap::~PyBootstrap() {
  // The runtime may outlive the interpreter (no finalize before exit): then drop the reference
  // without touching Python.
  if (!Py_IsInitialized()) {
    channel_.release();
    return;
  }
  py::gil_scoped_acquire gil;
  channel_ = py::object();
}

Status PyBootstrap::allgather(const void* send, void* recv, size_t bytes) {
  py::gil_scoped_acquire gil;  // the bytes object is built under the GIL too
  return exchange(channel_, "allgather", recv, bytes * size_, as_bytes(send, bytes));
}

Status PyBootstrap::alltoall(const void* send, void* recv, size_t bytes) {
  const size_t row = bytes * size_;
  std::vector<char> all(row * size_);
  MORI_TRY(allgather(send, all.data(), row));
  // Rank r's send block rank_ is this rank's recv block r.
  for (int r = 0; r < size_; ++r)
    std::memcpy(static_cast<char*>(recv) + r * bytes, all.data() + r * row + rank_ * bytes, bytes);
  return {};
}

Status PyBootstrap::barrier() { return exchange(channel_, "barrier", nullptr, 0); }

Status PyBootstrap::broadcast(void* buf, size_t bytes, int root) {
  if (root < 0 || root >= size_) {
    return Status::error("bootstrap: broadcast root " + std::to_string(root) +
                         " is out of range for size " + std::to_string(size_));
  }
  py::gil_scoped_acquire gil;
  return exchange(channel_, "broadcast", buf, bytes, as_bytes(buf, bytes), root);
}

}  // namespace mori::python
