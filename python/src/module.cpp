// mori._mori_shmem: the host API of mori::shmem (include/mori/shmem/host_api.hpp) under the user
// guide's Python names. A failing call raises RuntimeError with the runtime's one-line reason
// (last_error()); collective calls release the GIL while they wait for the other PEs.
#include <pybind11/pybind11.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "mori/shmem/host_api.hpp"
#include "mori/version.hpp"
#include "py_bootstrap.hpp"
#include "py_stream.hpp"
#include "runtime/init.hpp"

namespace py = pybind11;
namespace shmem = mori::shmem;

namespace {

using Released = py::call_guard<py::gil_scoped_release>;

[[noreturn]] void raise_last_error() { throw std::runtime_error(shmem::last_error()); }

// Status-code calls: 0, or an exception.
int check(int rc) {
  if (rc != 0) raise_last_error();
  return 0;
}

// Address results. 0 is a failure only when the call gave a reason: malloc of 0 bytes and
// ptr_p2p to a PE reached over RDMA return 0 and succeed.
uint64_t address(uint64_t a) {
  if (a == 0 && *shmem::last_error()) raise_last_error();
  return a;
}
uint64_t address(void* p) { return address(reinterpret_cast<uint64_t>(p)); }

int query(int value) {
  if (value < 0) raise_last_error();
  return value;
}

// Team queries: -1 is an answer (an invalid team), a failure only with a reason (before init).
int team_query(int value) {
  if (value < 0 && *shmem::last_error()) raise_last_error();
  return value;
}

// 1 / 0 answers: 0 is a failure only when the call gave a reason (before init).
int predicate(int value) {
  if (value == 0 && *shmem::last_error()) raise_last_error();
  return value;
}

void* as_pointer(uint64_t address) { return reinterpret_cast<void*>(address); }

int init_attr(unsigned flags, int rank, int world_size, const py::object& unique_id) {
  if (flags == shmem::MORI_SHMEM_INIT_WITH_MPI_COMM) {
    // MPI_COMM_WORLD, starting MPI if nobody has: Python has no MPI_Comm to give.
    py::gil_scoped_release released;
    return check(shmem::init());
  }
  shmem::InitAttr attr;
  attr.rank = rank;
  attr.n_ranks = world_size;
  if (flags == shmem::MORI_SHMEM_INIT_WITH_UNIQUEID) {
    if (!py::isinstance<py::bytes>(unique_id))
      throw py::type_error("shmem_init_attr: unique_id must be bytes from shmem_get_unique_id()");
    const std::string_view id = unique_id.cast<py::bytes>();
    if (id.size() != sizeof attr.uid.bytes) {
      throw py::value_error("shmem_init_attr: unique_id has " + std::to_string(id.size()) +
                            " bytes, not " + std::to_string(sizeof attr.uid.bytes));
    }
    std::memcpy(attr.uid.bytes, id.data(), id.size());
  }
  py::gil_scoped_release released;
  return check(shmem::init_attr(flags, &attr));
}

py::bytes get_unique_id() {
  shmem::UniqueId uid;
  if (shmem::get_unique_id(&uid) != 0) raise_last_error();
  return py::bytes(reinterpret_cast<const char*>(uid.bytes), sizeof uid.bytes);
}

int init_with_channel(const std::string& api, py::object channel, int rank, int world_size) {
  auto boot = std::make_unique<mori::python::PyBootstrap>(std::move(channel), rank, world_size);
  py::gil_scoped_release released;
  return check(mori::runtime::init_with_bootstrap(api.c_str(), std::move(boot)));
}

}  // namespace

PYBIND11_MODULE(_mori_shmem, m) {
  m.doc() = "mori::shmem host API (include/mori/shmem/host_api.hpp); errors raise RuntimeError";
  m.attr("MORI_SHMEM_INIT_WITH_MPI_COMM") = shmem::MORI_SHMEM_INIT_WITH_MPI_COMM;
  m.attr("MORI_SHMEM_INIT_WITH_UNIQUEID") = shmem::MORI_SHMEM_INIT_WITH_UNIQUEID;
  m.attr("version") = mori::version();
  m.attr("backend") = mori::backend();

  m.def("shmem_get_unique_id", &get_unique_id,
        "128 bytes naming a listener in this process, which must become rank 0.");
  m.def("shmem_init_attr", &init_attr, py::arg("flags"), py::arg("rank") = -1,
        py::arg("world_size") = 0, py::arg("unique_id") = py::none(),
        "Collective. MORI_SHMEM_INIT_WITH_UNIQUEID: rank, world_size and rank 0's unique_id. "
        "MORI_SHMEM_INIT_WITH_MPI_COMM: MPI_COMM_WORLD (rank and world_size come from MPI).");
  m.def("_init_with_channel", &init_with_channel, py::arg("api"), py::arg("channel"),
        py::arg("rank"), py::arg("world_size"),
        "Collective. Initialises over `channel`'s allgather/broadcast/barrier (bytes).");
  m.def("shmem_finalize", [] { return check(shmem::finalize()); }, Released(), "Collective.");

  m.def("shmem_mype", [] { return query(shmem::my_pe()); }, "This PE, 0 to npes - 1.");
  m.def("shmem_npes", [] { return query(shmem::n_pes()); }, "The number of PEs.");
  m.def(
      "shmem_num_qp_per_pe", [] { return query(shmem::num_qp_per_pe()); },
      "RDMA queue pairs per PE (MORI_NUM_QP_PER_PE).");

  m.def(
      "shmem_malloc", [](size_t size) { return address(shmem::malloc(size)); }, py::arg("size"),
      Released(), "Collective. The address (int) of `size` symmetric bytes, 256-byte aligned.");
  m.def(
      "shmem_malloc_align",
      [](size_t alignment, size_t size) { return address(shmem::malloc_align(alignment, size)); },
      py::arg("alignment"), py::arg("size"), Released(),
      "Collective. As shmem_malloc; the address is a multiple of `alignment`, a power of two up "
      "to 64 MiB.");
  m.def(
      "shmem_ext_malloc_with_flags",
      [](size_t size, unsigned flags) {
        return address(shmem::ext_malloc_with_flags(size, flags));
      },
      py::arg("size"), py::arg("flags") = 0, Released(),
      "Collective. As shmem_malloc; flags must be 0 (others are reserved).");
  m.def(
      "shmem_calloc", [](size_t count, size_t size) { return address(shmem::calloc(count, size)); },
      py::arg("count"), py::arg("size"), Released(),
      "Collective. As shmem_malloc(count * size), zeroed; 0 when count or size is 0.");
  m.def(
      "shmem_realloc",
      [](uint64_t ptr, size_t size) { return address(shmem::realloc(as_pointer(ptr), size)); },
      py::arg("ptr"), py::arg("size"), Released(),
      "Collective. The address of a new object holding the first min(old, size) bytes of ptr's, "
      "which is freed; 0 acts as shmem_malloc, size 0 frees and returns 0. On failure raises and "
      "ptr is still live.");
  m.def(
      "shmem_free", [](uint64_t ptr) { check(shmem::free(as_pointer(ptr))); }, py::arg("ptr"),
      Released(), "Collective. Frees an address from shmem_malloc*; 0 is a no-op.");
  m.def(
      "shmem_buffer_register",
      [](uint64_t ptr, size_t size) {
        return check(shmem::buffer_register(as_pointer(ptr), size));
      },
      py::arg("ptr"), py::arg("size"), Released(),
      "Collective. Registers [ptr, ptr + size) for device calls; returns 0.");
  m.def(
      "shmem_buffer_deregister",
      [](uint64_t ptr, size_t size) {
        return check(shmem::buffer_deregister(as_pointer(ptr), size));
      },
      py::arg("ptr"), py::arg("size"), Released(), "Collective. Undoes shmem_buffer_register.");
  m.def(
      "shmem_buffer_register_symmetric",
      [](uint64_t ptr, size_t size) {
        return check(shmem::buffer_register_symmetric(as_pointer(ptr), size));
      },
      py::arg("ptr"), py::arg("size"), Released(),
      "Collective. As shmem_buffer_register, and same-node peers map the buffer, so it is reached "
      "like heap memory over P2P too; the memory must come from shmem_ext_alloc_shareable (host "
      "backend) or hipMalloc (hip). Returns 0.");
  m.def(
      "shmem_ext_alloc_shareable",
      [](size_t size) { return address(shmem::ext_alloc_shareable(size)); }, py::arg("size"),
      "The address of `size` bytes that same-node peers can map (for "
      "shmem_buffer_register_symmetric). Not collective.");
  m.def(
      "shmem_ext_free_shareable",
      [](uint64_t ptr) { return check(shmem::ext_free_shareable(as_pointer(ptr))); },
      py::arg("ptr"),
      "Frees shmem_ext_alloc_shareable memory (deregister it first); 0 is a no-op.");
  m.def(
      "shmem_ptr_p2p",
      [](uint64_t ptr, int my_pe, int dest_pe) {
        return address(shmem::ptr_p2p(ptr, my_pe, dest_pe));
      },
      py::arg("ptr"), py::arg("my_pe"), py::arg("dest_pe"),
      "Where this process reaches dest_pe's copy of `ptr`; 0 when dest_pe is reached over RDMA "
      "or ptr is not symmetric.");
  m.def(
      "shmem_pe_accessible", [](int pe) { return predicate(shmem::pe_accessible(pe)); },
      py::arg("pe"), "1 when pe is a PE this PE reaches, else 0.");
  m.def(
      "shmem_addr_accessible",
      [](uint64_t addr, int pe) { return predicate(shmem::addr_accessible(as_pointer(addr), pe)); },
      py::arg("addr"), py::arg("pe"),
      "1 when addr is symmetric (heap or registered buffer) and pe is accessible, else 0.");
  m.def(
      "shmem_info_get_version",
      [] {
        int major = 0, minor = 0;
        shmem::info_get_version(&major, &minor);
        return py::make_tuple(major, minor);
      },
      "The OpenSHMEM specification followed, (1, 5).");
  m.def(
      "shmem_info_get_name",
      [] {
        char name[shmem::kMaxNameLen];
        shmem::info_get_name(name);
        return std::string(name);
      },
      "\"mori <version>\".");
  m.def(
      "shmem_barrier_all", [] { check(shmem::barrier_all()); }, Released(),
      "Collective. Writes before it are visible to every PE after it.");
  m.attr("MORI_SHMEM_TEAM_INVALID") = shmem::kTeamInvalid;
  m.attr("MORI_SHMEM_TEAM_WORLD") = shmem::kTeamWorld;
  m.attr("MORI_SHMEM_TEAM_SHARED") = shmem::kTeamShared;
  m.attr("MORI_SHMEM_TEAM_SAME_LOCAL_INDEX") = shmem::kTeamSameLocalIndex;
  m.def(
      "shmem_team_my_pe", [](int team) { return team_query(shmem::team_my_pe(team)); },
      py::arg("team"), "This PE's number in the team; -1 if the team is invalid here.");
  m.def(
      "shmem_team_n_pes", [](int team) { return team_query(shmem::team_n_pes(team)); },
      py::arg("team"), "The team's size; -1 if the team is invalid here.");
  m.def(
      "shmem_team_translate_pe",
      [](int src_team, int src_pe, int dest_team) {
        return team_query(shmem::team_translate_pe(src_team, src_pe, dest_team));
      },
      py::arg("src_team"), py::arg("src_pe"), py::arg("dest_team"),
      "src_team's PE src_pe as a PE of dest_team; -1 if it is none.");
  m.def(
      "shmem_team_split_strided",
      [](int parent, int start, int stride, int size) {
        shmem::Team team = shmem::kTeamInvalid;
        check(shmem::team_split_strided(parent, start, stride, size, nullptr, 0, &team));
        return team;
      },
      Released(), py::arg("parent"), py::arg("start"), py::arg("stride"), py::arg("size"),
      "Collective over the parent: the new team, or MORI_SHMEM_TEAM_INVALID on the parent's PEs "
      "outside it.");
  m.def(
      "shmem_team_split_2d",
      [](int parent, int xrange) {
        shmem::Team x = shmem::kTeamInvalid, y = shmem::kTeamInvalid;
        int rc = 0;
        {
          py::gil_scoped_release released;  // collective: peers' Python bootstraps need the GIL
          rc = shmem::team_split_2d(parent, xrange, nullptr, 0, &x, nullptr, 0, &y);
        }
        check(rc);
        return py::make_tuple(x, y);
      },
      py::arg("parent"), py::arg("xrange"),
      "Collective over the parent: (xaxis_team, yaxis_team), this PE's row and column of the "
      "parent's PEs laid out xrange wide.");
  m.def(
      "shmem_team_destroy", [](int team) { check(shmem::team_destroy(team)); }, Released(),
      py::arg("team"), "Collective over the team.");
  m.def(
      "shmem_module_init",
      [](uint64_t module) { return check(shmem::module_init(as_pointer(module))); },
      py::arg("module"),
      "Copies the device state into a loaded module: a hipModule_t, or on the host backend a "
      "dlopen handle (ctypes.CDLL(path)._handle); returns 0.");
  m.def(
      "shmem_module_finalize",
      [](uint64_t module) { return check(shmem::module_finalize(as_pointer(module))); },
      py::arg("module"),
      "Forgets a module given to shmem_module_init, so that it may be unloaded; returns 0.");
  // OpenSHMEM 1.5's remaining host calls (host_api.hpp, "OpenSHMEM 1.5").
  m.attr("SHMEM_THREAD_SINGLE") = shmem::kThreadSingle;
  m.attr("SHMEM_THREAD_FUNNELED") = shmem::kThreadFunneled;
  m.attr("SHMEM_THREAD_SERIALIZED") = shmem::kThreadSerialized;
  m.attr("SHMEM_THREAD_MULTIPLE") = shmem::kThreadMultiple;
  m.attr("SHMEM_MALLOC_ATOMICS_REMOTE") = shmem::kMallocAtomicsRemote;
  m.attr("SHMEM_MALLOC_SIGNAL_REMOTE") = shmem::kMallocSignalRemote;
  m.def(
      "shmem_init_thread",
      [](int requested) {
        int provided = -1;
        {
          py::gil_scoped_release released;
          check(shmem::init_thread(requested, &provided));
        }
        return provided;
      },
      py::arg("requested"),
      "Collective. As shmem_init (over MPI_COMM_WORLD); returns the thread level provided.");
  m.def(
      "shmem_query_thread",
      [] {
        int provided = -1;
        check(shmem::query_thread(&provided));
        return provided;
      },
      "The thread level init gave.");
  m.def(
      "shmem_global_exit", [](int status) { shmem::global_exit(status); }, py::arg("status"),
      "Ends every PE's process with exit status `status`; does not return.");
  m.def(
      "shmem_team_ptr",
      [](int team, uint64_t dest, int pe) {
        return address(shmem::team_ptr(team, as_pointer(dest), pe));
      },
      py::arg("team"), py::arg("dest"), py::arg("pe"),
      "Where this process reaches the team's PE pe's copy of dest; 0 when there is no such "
      "address.");
  m.def(
      "shmem_team_create_ctx",
      [](int team, long options) {
        shmem::Ctx ctx = shmem::kCtxInvalid;
        check(shmem::team_create_ctx(team, options, &ctx));
        return ctx.qp;
      },
      py::arg("team"), py::arg("options") = 0,
      "A context (its QP index, an int) remembering the team.");
  m.def(
      "shmem_ctx_get_team",
      [](int ctx) {
        shmem::Team team = shmem::kTeamInvalid;
        check(shmem::ctx_get_team(shmem::Ctx{ctx}, &team));
        return team;
      },
      py::arg("ctx"), "The team a context was made for.");
  m.def(
      "shmem_malloc_with_hints",
      [](size_t size, long hints) { return address(shmem::malloc_with_hints(size, hints)); },
      py::arg("size"), py::arg("hints"), Released(),
      "Collective. As shmem_malloc; hints: 0 or SHMEM_MALLOC_* bits.");
  mori::python::add_stream_api(m);
}
