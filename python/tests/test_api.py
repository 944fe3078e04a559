"""mori.shmem and mori.ir in one process: names, errors before init, bad IDs and group names, a
one-PE job, module_init, and the bitcode manifest."""

import ctypes
import os

import pytest
import torch

import mori
import mori.shmem
from mori import shmem

GUIDE_NAMES = [
    "shmem_torch_process_group_init",
    "shmem_get_unique_id",
    "shmem_init_attr",
    "shmem_finalize",
    "shmem_mype",
    "shmem_npes",
    "shmem_num_qp_per_pe",
    "shmem_malloc",
    "shmem_malloc_align",
    "shmem_ext_malloc_with_flags",
    "shmem_calloc",
    "shmem_realloc",
    "shmem_free",
    "shmem_buffer_register",
    "shmem_buffer_deregister",
    "shmem_buffer_register_symmetric",
    "shmem_ext_alloc_shareable",
    "shmem_ext_free_shareable",
    "shmem_ptr_p2p",
    "shmem_pe_accessible",
    "shmem_addr_accessible",
    "shmem_info_get_version",
    "shmem_info_get_name",
    "shmem_barrier_all",
    "shmem_module_init",
]


def test_guide_names_and_flags():
    assert mori.shmem is shmem
    for name in GUIDE_NAMES:
        assert callable(getattr(mori.shmem, name)), name
    assert mori.shmem.MORI_SHMEM_INIT_WITH_MPI_COMM == 0
    assert mori.shmem.MORI_SHMEM_INIT_WITH_UNIQUEID == 1
    assert shmem.backend == "host"


BEFORE_INIT = [
    ("my_pe", lambda: shmem.shmem_mype()),
    ("n_pes", lambda: shmem.shmem_npes()),
    ("num_qp_per_pe", lambda: shmem.shmem_num_qp_per_pe()),
    ("malloc", lambda: shmem.shmem_malloc(64)),
    ("malloc_align", lambda: shmem.shmem_malloc_align(alignment=256, size=64)),
    ("free", lambda: shmem.shmem_free(4096)),
    ("calloc", lambda: shmem.shmem_calloc(1, 64)),
    ("realloc", lambda: shmem.shmem_realloc(0, 64)),
    ("pe_accessible", lambda: shmem.shmem_pe_accessible(0)),
    ("addr_accessible", lambda: shmem.shmem_addr_accessible(4096, 0)),
    ("buffer_register", lambda: shmem.shmem_buffer_register(4096, 64)),
    ("ptr_p2p", lambda: shmem.shmem_ptr_p2p(4096, 0, 0)),
    ("barrier_all", lambda: shmem.shmem_barrier_all()),
    ("module_init", lambda: shmem.shmem_module_init(0)),
    ("query_thread", lambda: shmem.shmem_query_thread()),
    ("malloc_with_hints", lambda: shmem.shmem_malloc_with_hints(64, 0)),
    ("finalize", lambda: shmem.shmem_finalize()),
]


@pytest.mark.parametrize("name,call", BEFORE_INIT, ids=[n for n, _ in BEFORE_INIT])
def test_call_before_init_raises(name, call):
    with pytest.raises(RuntimeError, match=rf"^{name}: not initialised \(call init or init_attr"):
        call()


def test_garbage_unique_id():
    flags = shmem.MORI_SHMEM_INIT_WITH_UNIQUEID
    with pytest.raises(RuntimeError, match="^init_attr: not a mori unique ID$"):
        shmem.shmem_init_attr(flags, 1, 2, bytes(range(128)))
    with pytest.raises(ValueError, match="unique_id has 16 bytes, not 128"):
        shmem.shmem_init_attr(flags, 0, 2, b"x" * 16)
    with pytest.raises(TypeError, match="unique_id must be bytes"):
        shmem.shmem_init_attr(flags, 0, 2, "not bytes")
    with pytest.raises(RuntimeError, match=r"rank 2 is not in \[0, n_ranks = 2\)"):
        shmem.shmem_init_attr(flags, 2, 2, bytes(128))
    with pytest.raises(RuntimeError, match=r"unknown flags 7"):
        shmem.shmem_init_attr(7, 0, 1, b"")


def test_unknown_group_name():
    with pytest.raises(RuntimeError, match="no process group is registered as 'nope'"):
        shmem.shmem_torch_process_group_init("nope")
    with pytest.raises(ValueError):
        shmem.register_process_group("", None)


@pytest.fixture
def solo_pe():
    """A one-PE job (Method 2 with world_size 1)."""
    uid = shmem.shmem_get_unique_id()
    assert shmem.shmem_init_attr(shmem.MORI_SHMEM_INIT_WITH_UNIQUEID, 0, 1, uid) == 0
    yield
    assert shmem.shmem_finalize() == 0


def test_solo_pe(solo_pe):
    assert (shmem.shmem_mype(), shmem.shmem_npes(), shmem.shmem_num_qp_per_pe()) == (0, 1, 4)
    with pytest.raises(RuntimeError, match="^init_attr: already initialised"):
        shmem.shmem_init_attr(shmem.MORI_SHMEM_INIT_WITH_UNIQUEID, 0, 1, bytes(128))
    with pytest.raises(RuntimeError, match="^malloc_align: alignment 3 is not a power of two$"):
        shmem.shmem_malloc_align(alignment=3, size=64)
    with pytest.raises(RuntimeError, match="^ext_malloc_with_flags: flags 1 are not supported"):
        shmem.shmem_ext_malloc_with_flags(64, 1)
    with pytest.raises(RuntimeError, match="^malloc: .*heap"):
        shmem.shmem_malloc(1 << 40)
    assert shmem.shmem_malloc(0) == 0  # OpenSHMEM: nothing allocated, no error
    assert shmem.shmem_info_get_version() == (1, 5)
    assert shmem.shmem_info_get_name() == "mori " + shmem.version
    assert (shmem.shmem_pe_accessible(0), shmem.shmem_pe_accessible(1)) == (1, 0)

    zeroed = shmem.shmem_calloc(64, 4)
    assert shmem.tensor(zeroed, 64, torch.int32).count_nonzero().item() == 0
    assert shmem.shmem_addr_accessible(zeroed, 0) == 1
    assert shmem.shmem_addr_accessible(zeroed, 1) == 0
    shmem.tensor(zeroed, 64, torch.int32).copy_(torch.arange(64, dtype=torch.int32))
    grown = shmem.shmem_realloc(zeroed, 4096)
    assert shmem.tensor(grown, 64, torch.int32).tolist() == list(range(64))
    with pytest.raises(RuntimeError, match="^calloc: .* overflow size_t$"):
        shmem.shmem_calloc(1 << 62, 8)
    with pytest.raises(RuntimeError, match="^realloc: .*heap exhausted"):
        shmem.shmem_realloc(grown, 1 << 40)
    assert shmem.shmem_realloc(grown, 0) == 0

    ptr = shmem.shmem_malloc_align(alignment=4096, size=1024)
    assert ptr % 4096 == 0
    view = shmem.tensor(ptr, (16, 16), torch.float32)
    view.copy_(torch.arange(256, dtype=torch.float32).view(16, 16))
    again = shmem.tensor(shmem.shmem_ptr_p2p(ptr, 0, 0), 256, torch.float32)
    assert again.sum().item() == sum(range(256))
    assert torch.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(view)).data_ptr() == ptr
    with pytest.raises(ValueError, match="ptr is 0"):
        shmem.tensor(0, 4, torch.int32)
    with pytest.raises(RuntimeError, match="is not the start of a live symmetric allocation"):
        shmem.shmem_free(ptr + 256)
    shmem.shmem_free(ptr)

    buf = torch.ones(1000, dtype=torch.int64)
    assert shmem.shmem_buffer_register(buf.data_ptr(), 8000) == 0
    with pytest.raises(RuntimeError, match="^buffer_register: .*overlaps the registered buffer"):
        shmem.shmem_buffer_register(buf.data_ptr(), 8000)
    assert shmem.shmem_buffer_deregister(buf.data_ptr(), 8000) == 0
    with pytest.raises(RuntimeError, match="^buffer_register_symmetric: .*is not memory from "
                       "mori::shmem::ext_alloc_shareable"):
        shmem.shmem_buffer_register_symmetric(buf.data_ptr(), 8000)
    shared = shmem.shmem_ext_alloc_shareable(8000)
    assert shared != 0
    assert shmem.shmem_buffer_register_symmetric(shared, 8000) == 0
    assert shmem.shmem_ptr_p2p(shared + 8, 0, 0) == shared + 8
    with pytest.raises(RuntimeError, match="buffer_deregister it first"):
        shmem.shmem_ext_free_shareable(shared)
    assert shmem.shmem_buffer_deregister(shared, 8000) == 0
    assert shmem.shmem_ext_free_shareable(shared) == 0
    shmem.shmem_barrier_all()


def test_openshmem15_calls(solo_pe):
    # The unique-ID bootstrap gives every level (docs/runtime.md, "Thread levels").
    assert shmem.shmem_query_thread() == shmem.SHMEM_THREAD_MULTIPLE
    hints = shmem.SHMEM_MALLOC_ATOMICS_REMOTE | shmem.SHMEM_MALLOC_SIGNAL_REMOTE
    ptr = shmem.shmem_malloc_with_hints(256, hints)
    assert ptr != 0
    with pytest.raises(RuntimeError, match="^malloc_with_hints: hints 4 "):
        shmem.shmem_malloc_with_hints(256, 4)
    assert shmem.shmem_team_ptr(shmem.MORI_SHMEM_TEAM_WORLD, ptr + 8, 0) == ptr + 8
    ctx = shmem.shmem_team_create_ctx(shmem.MORI_SHMEM_TEAM_WORLD)
    assert ctx > 0
    assert shmem.shmem_ctx_get_team(ctx) == shmem.MORI_SHMEM_TEAM_WORLD
    with pytest.raises(RuntimeError, match="^team_create_ctx: "):
        shmem.shmem_team_create_ctx(shmem.MORI_SHMEM_TEAM_INVALID)
    shmem.shmem_free(ptr)


def test_init_again_after_finalize(solo_pe):
    assert shmem.shmem_npes() == 1


def _bitcode_expected():
    return os.environ.get("MORI_TEST_BITCODE") == "1"


def test_module_init(solo_pe):
    libc = ctypes.CDLL("libc.so.6")
    with pytest.raises(RuntimeError, match="^module_init: "):
        shmem.shmem_module_init(libc._handle)
    if "MORI_TEST_HOST_MODULE" not in os.environ:
        pytest.skip("MORI_TEST_HOST_MODULE is not set (ctest sets it)")
    module = ctypes.CDLL(os.environ["MORI_TEST_HOST_MODULE"])  # python/tests/host_module.cpp
    assert module.mori_test_module_pes() == 0
    assert shmem.shmem_module_init(module._handle) == 0
    assert module.mori_test_module_pes() == 0 * 1000 + 1
    assert shmem.shmem_module_finalize(module._handle) == 0
    with pytest.raises(RuntimeError, match="^module_finalize: the module was not given to module_init"):
        shmem.shmem_module_finalize(module._handle)


@pytest.fixture
def ir():
    built = (mori.ir.library_dir() / mori.ir.MANIFEST).is_file()
    if not built and not _bitcode_expected():
        pytest.skip("the device bitcode is not built (needs clang++-19 and the LLVM 19 tools)")
    return mori.ir


def test_ir_bitcode_and_manifest(ir):
    for arch in ("gfx942", "host"):
        path = ir.bitcode_path(arch)
        assert path.is_file() and path.read_bytes()[:4] in (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")
    assert ir.bitcode_path(arch="gfx942").name == "libmori_shmem_device_gfx942.bc"
    assert {"gfx942", "host"} <= set(ir.architectures())
    with pytest.raises(FileNotFoundError, match="no bitcode for 'gfx1234'"):
        ir.bitcode_path("gfx1234")

    doc = ir.manifest()
    assert doc["mori_version"] == mori.__version__
    assert doc["function_count"] == len(ir.functions()) > 0
    assert doc["device_state"]["symbol"] == "_ZN4mori5shmem15globalGpuStatesE"
    f = ir.function("mori_shmem_int32_p")
    assert ir.function("int32_p") is f
    assert (f["scope"], f["returns"]["llvm"]) == ("thread", "i32")
    assert [p["name"] for p in f["params"]] == ["dest", "val", "pe", "qpId"]
    assert ir.llvm_declaration("int32_p") == "declare i32 @mori_shmem_int32_p(ptr, i32, i32, i32)"
    assert ir.llvm_declaration("char_g") == "declare signext i8 @mori_shmem_char_g(ptr, i32, i32)"
    # The team, collective and context families are in the manifest a front end declares from.
    assert ir.llvm_declaration("team_sync_block") == "declare i32 @mori_shmem_team_sync_block(i32)"
    assert (ir.llvm_declaration("reduce_float_block") ==
            "declare i32 @mori_shmem_reduce_float_block(i32, ptr, ptr, i64, i32)")
    assert [p["name"] for p in ir.function("reducescatter_int64_warp")["params"]] == [
        "team", "dest", "source", "nreduce", "op"]
    assert (ir.llvm_declaration("broadcastmem_thread") ==
            "declare i32 @mori_shmem_broadcastmem_thread(i32, ptr, ptr, i64, i32)")
    assert ir.function("fcollectmem_warp")["scope"] == "warp"
    assert ir.function("ctx_quiet_thread")["scope"] == "thread"
    with pytest.raises(KeyError, match="did you mean mori_shmem_int32_p"):
        ir.function("int32_pp")


class _SoloChannel:
    """The byte collectives of one PE: what a process-group channel returns when it is alone."""

    def allgather(self, data):
        return data

    def broadcast(self, data, root):
        return data

    def barrier(self):
        pass


class _Broken(_SoloChannel):
    def allgather(self, data):
        raise ConnectionError("peer went away")


class _Short(_SoloChannel):
    def allgather(self, data):
        return data[:-1]


def test_init_over_a_python_bootstrap():
    from mori import _mori_shmem

    assert _mori_shmem._init_with_channel("custom_init", _SoloChannel(), 0, 1) == 0
    ptr = shmem.shmem_malloc(256)
    shmem.shmem_barrier_all()
    shmem.shmem_free(ptr)
    assert shmem.shmem_finalize() == 0

    failures = [
        (_Broken(), 0, "allgather failed: ConnectionError: peer went away"),
        (_Short(), 0, r"allgather returned (\d+) bytes, expected (?!\1)\d+"),
        (_SoloChannel(), 1, r"rank 1 is not in \[0, size = 1\)"),
    ]
    for channel, rank, reason in failures:
        with pytest.raises(RuntimeError, match=f"^custom_init: (bootstrap: )?{reason}$"):
            _mori_shmem._init_with_channel("custom_init", channel, rank, 1)
        with pytest.raises(RuntimeError, match="not initialised"):
            shmem.shmem_mype()


def test_stream_calls_before_init_and_bad_streams():
    stream = shmem.Stream()
    assert stream.query()
    stream.synchronize()
    with pytest.raises(RuntimeError, match=r"^barrier_all_on_stream: not initialised"):
        shmem.shmem_barrier_on_stream(stream)
    with pytest.raises(RuntimeError, match=r"^putmem_on_stream: not initialised"):
        shmem.shmem_putmem_on_stream(4096, 4096, 8, 0)
    with pytest.raises(TypeError, match="a mori.shmem.Stream or None on the host backend"):
        shmem.shmem_quiet_on_stream(object())
    with pytest.raises(ValueError, match="dtype 'int33' is not a mori element type"):
        shmem.shmem_reduce_on_stream(0, 4096, 4096, 1, "int33", "sum")
    with pytest.raises(ValueError, match="op 'mean' is not a reduction"):
        shmem.shmem_reduce_on_stream(0, 4096, 4096, 1, "int32", "mean")


def test_streams_on_one_pe(solo_pe):
    n = 64
    src, dst, sig = shmem.shmem_malloc(n * 8), shmem.shmem_malloc(n * 8), shmem.shmem_calloc(1, 8)
    shmem.tensor(src, n, torch.float64).copy_(torch.arange(n, dtype=torch.float64) / 4)
    stream = shmem.Stream()
    shmem.shmem_putmem_signal_on_stream(dst, src, n * 8, sig, 3, shmem.SIGNAL_SET, 0, stream)
    shmem.shmem_signal_wait_until_on_stream(sig, shmem.CMP_EQ, 3, stream)
    shmem.shmem_reduce_on_stream(shmem.MORI_SHMEM_TEAM_WORLD, src, dst, n, "double", "max", stream)
    shmem.shmem_barrier_on_stream(stream)
    stream.synchronize()
    assert torch.equal(shmem.tensor(src, n, torch.float64), torch.arange(n, dtype=torch.float64) / 4)
    assert shmem.tensor(sig, 1, torch.int64).item() == 3
    with pytest.raises(RuntimeError, match=r"^putmem_on_stream: PE 1 is not in \[0, 1\)"):
        shmem.shmem_putmem_on_stream(dst, src, 8, 1, stream)
    for p in (sig, dst, src):
        shmem.shmem_free(p)
