"""The user guide's Python (the guide is named in docs/python.md), nearly verbatim, as functions that
every PE of a spawn or mpirun test runs. Lines that differ from the guide say why (docs/python.md)."""

import datetime

import pytest
import torch
import torch.distributed as dist

import mori

TIMEOUT = datetime.timedelta(seconds=60)


def method1_torch_group(rank, world_size, init_method):
    """Section 2, Method 1: shmem over a registered torch.distributed process group."""
    # Guide: backend="cpu:gloo,cuda:nccl". torch 1.13 parses no per-device list and has no NCCL
    # here; gloo is the CPU backend the bootstrap uses in either case.
    dist.init_process_group(
        backend="gloo", init_method=init_method, rank=rank, world_size=world_size, timeout=TIMEOUT
    )
    world_group = dist.group.WORLD
    # Guide: torch._C._distributed_c10d._register_process_group("default", world_group), which
    # torch 1.13 lacks.
    mori.shmem.register_process_group("default", world_group)
    mori.shmem.shmem_torch_process_group_init("default")


def method2_unique_id(rank, world_size, share):
    """Section 2, Method 2: shmem from rank 0's unique ID. ``share(unique_id or None)`` is "your
    transport": it gives every rank rank 0's bytes."""
    unique_id = None
    if rank == 0:
        unique_id = mori.shmem.shmem_get_unique_id()  # Returns 128 bytes
        assert isinstance(unique_id, bytes) and len(unique_id) == 128
    unique_id = share(unique_id)
    mori.shmem.shmem_init_attr(
        mori.shmem.MORI_SHMEM_INIT_WITH_UNIQUEID,
        rank,  # My rank
        world_size,  # Total ranks
        unique_id,  # Shared unique ID (bytes)
    )


def quick_reference(rank, world_size, size_in_bytes=1 << 16):
    """The Quick Reference and sections 3 to 6 on an initialised PE, checked; ends before
    shmem_finalize."""
    # Query
    my_rank = mori.shmem.shmem_mype()
    num_ranks = mori.shmem.shmem_npes()
    assert (my_rank, num_ranks) == (rank, world_size)
    my_pe = mori.shmem.shmem_mype()
    total_pes = mori.shmem.shmem_npes()
    num_qp = mori.shmem.shmem_num_qp_per_pe()
    assert num_qp >= 1

    # Allocate symmetric memory
    ptr = mori.shmem.shmem_malloc(size_in_bytes)
    aligned = mori.shmem.shmem_malloc_align(alignment=256, size=size_in_bytes)
    flagged = mori.shmem.shmem_ext_malloc_with_flags(size_in_bytes, 0)  # flags: 0 (host memory)
    assert all(isinstance(p, int) and p for p in (ptr, aligned, flagged))
    assert aligned % 256 == 0
    with pytest.raises(RuntimeError, match="malloc_align: alignment 3 is not a power of two"):
        mori.shmem.shmem_malloc_align(alignment=3, size=size_in_bytes)

    # Register existing buffer for RDMA (guide: device="cuda"; the host backend's memory is CPU)
    tensor = torch.zeros(1024, 7168, dtype=torch.bfloat16)
    nbytes = tensor.numel() * tensor.element_size()  # guide: tensor.nbytes, not in torch 1.13
    assert mori.shmem.shmem_buffer_register(tensor.data_ptr(), nbytes) == 0
    assert mori.shmem.shmem_ptr_p2p(tensor.data_ptr(), my_pe, my_pe) == tensor.data_ptr()

    # P2P address translation (intra-node): write my PE's pattern into the next PE's copy
    dest_pe = (my_pe + 1) % total_pes
    remote_ptr = mori.shmem.shmem_ptr_p2p(ptr, my_pe, dest_pe)
    assert remote_ptr != 0
    if dest_pe != my_pe:  # a registered buffer is private memory: peers reach it over RDMA
        assert mori.shmem.shmem_ptr_p2p(tensor.data_ptr(), my_pe, dest_pe) == 0
    count = size_in_bytes // 4
    pattern = torch.arange(count, dtype=torch.int32)
    mori.shmem.tensor(remote_ptr, (count,), torch.int32).copy_(pattern + 1000 * my_pe)
    mori.shmem.tensor(aligned, (count,), torch.int32).fill_(my_pe)

    # Synchronize
    mori.shmem.shmem_barrier_all()
    source_pe = (my_pe - 1) % total_pes
    assert torch.equal(mori.shmem.tensor(ptr, (count,), torch.int32), pattern + 1000 * source_pe)
    peer = mori.shmem.tensor(mori.shmem.shmem_ptr_p2p(aligned, my_pe, dest_pe), count, torch.int32)
    assert bool((peer == dest_pe).all())
    mori.shmem.shmem_barrier_all()  # everyone has read before anything is freed

    # Cleanup
    assert mori.shmem.shmem_buffer_deregister(tensor.data_ptr(), nbytes) == 0
    for p in (flagged, aligned, ptr):
        mori.shmem.shmem_free(p)


def misuse_after_init(group_name="default"):
    """Calls that must fail on an initialised PE, each naming its cause; none is collective."""
    with pytest.raises(RuntimeError, match="already initialised"):
        mori.shmem.shmem_torch_process_group_init(group_name)
    with pytest.raises(RuntimeError, match="no process group is registered as 'nope'"):
        mori.shmem.shmem_torch_process_group_init("nope")
    with pytest.raises(RuntimeError, match=r"ptr_p2p: PE 99 is not in \[0, "):
        mori.shmem.shmem_ptr_p2p(1, mori.shmem.shmem_mype(), 99)
