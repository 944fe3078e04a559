// The stream-ordered host API (include/mori/shmem/stream_api.hpp) in Python: shmem_*_on_stream,
// each taking a stream (None: the default stream). On the host backend a stream is a
// mori.shmem.Stream (mori::host::Stream); on hip it is a torch.cuda.Stream, whose `cuda_stream`
// integer is its hipStream_t under ROCm's torch, or that integer itself.
#include "py_stream.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "mori/shmem/stream_api.hpp"
#include "mori/state/amo.hpp"
#if defined(MORI_BACKEND_HOST)
#include "mori/host/stream.hpp"
#endif

namespace py = pybind11;
namespace shmem = mori::shmem;

namespace mori::python {

namespace {

using Released = py::call_guard<py::gil_scoped_release>;

int check(int rc) {
  if (rc != 0) throw std::runtime_error(shmem::last_error());
  return 0;
}

void* as_pointer(uint64_t address) { return reinterpret_cast<void*>(address); }
uint64_t* as_signal(uint64_t address) { return reinterpret_cast<uint64_t*>(address); }

// The stream a Python argument names.
shmem::stream_t as_stream(const py::object& stream) {
  if (stream.is_none()) return nullptr;
#if defined(MORI_BACKEND_HOST)
  if (py::isinstance<host::Stream>(stream)) return stream.cast<host::Stream*>();
  throw py::type_error(
      "stream: a mori.shmem.Stream or None on the host backend (torch has no device streams "
      "there)");
#else
  // torch.cuda.Stream (ROCm's torch): cuda_stream is the hipStream_t as an integer.
  py::object handle = py::hasattr(stream, "cuda_stream") ? stream.attr("cuda_stream") : stream;
  if (!py::isinstance<py::int_>(handle))
    throw py::type_error("stream: a torch.cuda.Stream, a hipStream_t as an int, or None");
  return reinterpret_cast<shmem::stream_t>(handle.cast<uintptr_t>());
#endif
}

// An element type by its name in MORI_FOR_EACH_TYPE ("int32", "float", ...): its index.
int type_index(const std::string& name) {
  int index = 0;
#define MORI_PY_TYPE_(type, abi_name)  \
  if (name == #abi_name) return index; \
  ++index;
  MORI_FOR_EACH_TYPE(MORI_PY_TYPE_)
#undef MORI_PY_TYPE_
  throw py::value_error("dtype '" + name +
                        "' is not a mori element type (uint8, int8, schar, uint16, int16, uint32, "
                        "int32, uint64, int64, float, double)");
}

shmem::ReduceOp reduce_op(const std::string& name) {
  int index = 0;
#define MORI_PY_OP_(reduce_name, scatter_name, op)                                  \
  if (name + "_reduce" == #reduce_name) return static_cast<shmem::ReduceOp>(index); \
  ++index;
  MORI_FOR_EACH_REDUCE_OP(MORI_PY_OP_)
#undef MORI_PY_OP_
  throw py::value_error("op '" + name + "' is not a reduction (and, or, xor, min, max, sum, prod)");
}

}  // namespace

void add_stream_api(py::module_& m) {
#if defined(MORI_BACKEND_HOST)
  py::class_<host::Stream>(m, "Stream",
                           "The host backend's stream: an ordered queue run by a worker thread "
                           "(include/mori/host/stream.hpp).")
      .def(py::init<>())
      .def(
          "synchronize",
          [](host::Stream& s) {
            if (Status status = s.synchronize(); !status.ok())
              throw std::runtime_error(status.message());
          },
          Released(),
          "Waits for the work queued so far; raises RuntimeError with its first failure.")
      .def("query", &host::Stream::idle, "True when everything queued has run.");
#endif
  m.attr("SIGNAL_SET") = static_cast<int>(shmem::SIGNAL_SET);
  m.attr("SIGNAL_ADD") = static_cast<int>(shmem::SIGNAL_ADD);
#define MORI_PY_CMP_(code, number, name, ...) m.attr(#code) = number;
  MORI_FOR_EACH_CMP(MORI_PY_CMP_)
#undef MORI_PY_CMP_

  const auto s = py::arg("stream") = py::none();
  m.def(
      "shmem_putmem_on_stream",
      [](uint64_t dest, uint64_t source, size_t nbytes, int pe, const py::object& stream) {
        return check(shmem::putmem_on_stream(as_pointer(dest), as_pointer(source), nbytes, pe,
                                             as_stream(stream)));
      },
      py::arg("dest"), py::arg("source"), py::arg("nbytes"), py::arg("pe"), s,
      "nbytes from source to the symmetric dest on pe, in stream order.");
  m.def(
      "shmem_getmem_on_stream",
      [](uint64_t dest, uint64_t source, size_t nbytes, int pe, const py::object& stream) {
        return check(shmem::getmem_on_stream(as_pointer(dest), as_pointer(source), nbytes, pe,
                                             as_stream(stream)));
      },
      py::arg("dest"), py::arg("source"), py::arg("nbytes"), py::arg("pe"), s,
      "nbytes from the symmetric source on pe into dest, in stream order.");
  m.def(
      "shmem_putmem_signal_on_stream",
      [](uint64_t dest, uint64_t source, size_t nbytes, uint64_t sig_addr, uint64_t signal,
         int sig_op, int pe, const py::object& stream) {
        return check(shmem::putmem_signal_on_stream(
            as_pointer(dest), as_pointer(source), nbytes, as_signal(sig_addr), signal,
            static_cast<shmem::atomicType>(sig_op), pe, as_stream(stream)));
      },
      py::arg("dest"), py::arg("source"), py::arg("nbytes"), py::arg("sig_addr"), py::arg("signal"),
      py::arg("sig_op"), py::arg("pe"), s,
      "putmem, then SIGNAL_SET or SIGNAL_ADD of signal on sig_addr at pe, in stream order.");
  m.def(
      "shmem_signal_op_on_stream",
      [](uint64_t sig_addr, uint64_t signal, int sig_op, int pe, const py::object& stream) {
        return check(shmem::signal_op_on_stream(as_signal(sig_addr), signal,
                                                static_cast<shmem::atomicType>(sig_op), pe,
                                                as_stream(stream)));
      },
      py::arg("sig_addr"), py::arg("signal"), py::arg("sig_op"), py::arg("pe"), s);
  m.def(
      "shmem_signal_wait_until_on_stream",
      [](uint64_t sig_addr, int cmp, uint64_t cmp_value, const py::object& stream) {
        return check(shmem::signal_wait_until_on_stream(
            as_signal(sig_addr), static_cast<shmem::Cmp>(cmp), cmp_value, as_stream(stream)));
      },
      py::arg("sig_addr"), py::arg("cmp"), py::arg("cmp_value"), s,
      "The stream waits until this PE's signal compares to cmp_value by cmp (CMP_EQ, ...).");
  m.def(
      "shmem_quiet_on_stream",
      [](const py::object& stream) { return check(shmem::quiet_on_stream(as_stream(stream))); }, s);
  // The original mori's name for barrier_all in stream order.
  for (const char* name : {"shmem_barrier_on_stream", "shmem_barrier_all_on_stream"}) {
    m.def(
        name,
        [](const py::object& stream) {
          return check(shmem::barrier_all_on_stream(as_stream(stream)));
        },
        s, "Collective: barrier_all in stream order (quiet, then every PE's stream meets).");
  }
  m.def(
      "shmem_sync_all_on_stream",
      [](const py::object& stream) { return check(shmem::sync_all_on_stream(as_stream(stream))); },
      s);
  m.def(
      "shmem_team_sync_on_stream",
      [](int team, const py::object& stream) {
        return check(shmem::team_sync_on_stream(team, as_stream(stream)));
      },
      py::arg("team"), s);
  m.def(
      "shmem_team_barrier_on_stream",
      [](int team, const py::object& stream) {
        return check(shmem::barrier_on_stream(team, as_stream(stream)));
      },
      py::arg("team"), s, "barrier_on_stream(team): quiet + team_sync, in stream order.");
  m.def(
      "shmem_broadcastmem_on_stream",
      [](int team, uint64_t dest, uint64_t source, size_t nbytes, int root,
         const py::object& stream) {
        return check(shmem::broadcastmem_on_stream(team, as_pointer(dest), as_pointer(source),
                                                   nbytes, root, as_stream(stream)));
      },
      py::arg("team"), py::arg("dest"), py::arg("source"), py::arg("nbytes"), py::arg("root"), s);
  m.def(
      "shmem_fcollectmem_on_stream",
      [](int team, uint64_t dest, uint64_t source, size_t nbytes, const py::object& stream) {
        return check(shmem::fcollectmem_on_stream(team, as_pointer(dest), as_pointer(source),
                                                  nbytes, as_stream(stream)));
      },
      py::arg("team"), py::arg("dest"), py::arg("source"), py::arg("nbytes"), s);
  m.def(
      "shmem_alltoallmem_on_stream",
      [](int team, uint64_t dest, uint64_t source, size_t nbytes, const py::object& stream) {
        return check(shmem::alltoallmem_on_stream(team, as_pointer(dest), as_pointer(source),
                                                  nbytes, as_stream(stream)));
      },
      py::arg("team"), py::arg("dest"), py::arg("source"), py::arg("nbytes"), s);
  for (bool scatter : {false, true}) {
    m.def(
        scatter ? "shmem_reducescatter_on_stream" : "shmem_reduce_on_stream",
        [scatter](int team, uint64_t dest, uint64_t source, size_t nreduce,
                  const std::string& dtype, const std::string& op, const py::object& stream) {
          return check(shmem::detail::reduction_on_stream(
              scatter, team, as_pointer(dest), as_pointer(source), nreduce, type_index(dtype),
              reduce_op(op), as_stream(stream)));
        },
        py::arg("team"), py::arg("dest"), py::arg("source"), py::arg("nreduce"), py::arg("dtype"),
        py::arg("op"), s,
        "nreduce elements of dtype ('int32', 'float', ...) combined by op ('sum', 'max', ...).");
  }
  m.def(
      "shmem_stream_synchronize",
      [](const py::object& stream) {
        const shmem::stream_t st = as_stream(stream);
        py::gil_scoped_release released;
        return check(shmem::stream_synchronize(st));
      },
      s, "Waits for the stream's work; raises RuntimeError with its first failure.");
}

}  // namespace mori::python
