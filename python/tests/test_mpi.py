"""The guide's Methods 1 and 2, and MORI_SHMEM_INIT_WITH_MPI_COMM, on every rank of an mpirun job
(ctest: python.mpi.np2 and python.mpi.np4). Every test is collective: all ranks run them in this
order, and the MPI one comes last because MPI cannot start again after its finalize."""

import contextlib
import os
import tempfile

import pytest
import torch.distributed as dist

import guide_flow
import mori

if "OMPI_COMM_WORLD_SIZE" not in os.environ:
    if os.environ.get("MORI_TEST_MPIRUN") == "1":  # ctest: skipping would hide a broken launch
        raise RuntimeError("test_mpi.py: not started by Open MPI's mpirun")
    pytest.skip("run under mpirun (ctest -L python)", allow_module_level=True)

RANK = int(os.environ["OMPI_COMM_WORLD_RANK"])
WORLD_SIZE = int(os.environ["OMPI_COMM_WORLD_SIZE"])


@pytest.fixture(scope="module")
def store_path():
    """A torch FileStore path of this mpirun job only (the job ID is the same on every rank)."""
    scratch = os.environ.get("MORI_TEST_SCRATCH", tempfile.gettempdir())
    path = os.path.join(scratch, f"torch-store-{os.environ['OMPI_MCA_ess_base_jobid']}")
    yield path
    if dist.is_initialized():
        dist.destroy_process_group()
    # torch's FileStore removes its file when the last rank closes it, which may be another rank, between the
    # check and the removal: a file already gone is the expected end, not an error.
    if RANK == 0:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def check_teams(rank, world_size):
    """The team API on every PE: a strided split, a split of it over its members only (over the
    unique-ID bootstrap, a TCP star of its own), split_2d, the invalid team, an error, destroy."""
    s = mori.shmem
    world, invalid = s.MORI_SHMEM_TEAM_WORLD, s.MORI_SHMEM_TEAM_INVALID
    assert (s.shmem_team_my_pe(world), s.shmem_team_n_pes(world)) == (rank, world_size)
    odds = s.shmem_team_split_strided(world, 1, 2, world_size // 2)
    if rank % 2:
        assert (s.shmem_team_my_pe(odds), s.shmem_team_n_pes(odds)) == (rank // 2, world_size // 2)
        assert s.shmem_team_translate_pe(odds, 0, world) == 1
        last = s.shmem_team_split_strided(odds, world_size // 2 - 1, 1, 1)
        assert s.shmem_team_my_pe(last) == (0 if rank == world_size - 1 else -1)
        s.shmem_team_destroy(last)
    else:
        assert odds == invalid and s.shmem_team_my_pe(odds) == -1
    assert s.shmem_team_translate_pe(world, rank, invalid) == -1
    row, column = s.shmem_team_split_2d(world, 2)
    assert (s.shmem_team_my_pe(row), s.shmem_team_my_pe(column)) == (rank % 2, rank // 2)
    with pytest.raises(RuntimeError, match="team_split_strided: stride 0 is not positive"):
        s.shmem_team_split_strided(world, 0, 0, 1)
    for team in (odds, row, column):
        s.shmem_team_destroy(team)


def check_streams(rank, world_size):
    """The stream-ordered calls on every PE: a put with a signal to the next PE, its wait, the
    original mori's shmem_barrier_on_stream, and a sum on the default stream, checked exactly."""
    import torch

    s = mori.shmem
    n, nxt, prv = 256, (rank + 1) % world_size, (rank - 1) % world_size
    src, dst, sig = s.shmem_malloc(n * 4), s.shmem_calloc(n, 4), s.shmem_calloc(1, 8)
    base = torch.arange(n, dtype=torch.int32)
    s.tensor(src, n, torch.int32).copy_(base + 1000 * rank)
    s.shmem_barrier_all()
    stream = s.Stream()
    s.shmem_putmem_signal_on_stream(dst, src, n * 4, sig, 1, s.SIGNAL_ADD, nxt, stream)
    s.shmem_signal_wait_until_on_stream(sig, s.CMP_EQ, 1, stream)
    s.shmem_barrier_on_stream(stream)
    stream.synchronize()
    assert torch.equal(s.tensor(dst, n, torch.int32), base + 1000 * prv)
    s.shmem_reduce_on_stream(s.MORI_SHMEM_TEAM_WORLD, dst, src, n, "int32", "sum")
    s.shmem_stream_synchronize()
    want = base * world_size + 1000 * world_size * (world_size - 1) // 2
    assert torch.equal(s.tensor(dst, n, torch.int32), want)
    s.shmem_barrier_all()
    for p in (sig, dst, src):
        s.shmem_free(p)


def test_method1_torch_process_group(store_path):
    guide_flow.method1_torch_group(RANK, WORLD_SIZE, f"file://{store_path}")
    guide_flow.quick_reference(RANK, WORLD_SIZE)
    guide_flow.misuse_after_init()
    assert mori.shmem.shmem_finalize() == 0


def test_method2_unique_id(store_path):
    def share(unique_id):  # "your transport": the torch group of the test above
        box = [unique_id]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    guide_flow.method2_unique_id(RANK, WORLD_SIZE, share)
    guide_flow.quick_reference(RANK, WORLD_SIZE)
    check_teams(RANK, WORLD_SIZE)
    check_streams(RANK, WORLD_SIZE)
    assert mori.shmem.shmem_finalize() == 0


def test_mpi_comm_world():
    # Python has no MPI_Comm to pass: the flag means MPI_COMM_WORLD, rank and size come from MPI.
    mori.shmem.shmem_init_attr(mori.shmem.MORI_SHMEM_INIT_WITH_MPI_COMM, RANK, WORLD_SIZE, None)
    guide_flow.quick_reference(RANK, WORLD_SIZE)
    check_teams(RANK, WORLD_SIZE)
    assert mori.shmem.shmem_finalize() == 0
