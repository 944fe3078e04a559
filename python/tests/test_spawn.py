"""The guide's Methods 1 and 2 with 2 and 4 PEs started by torch.multiprocessing.spawn."""

import pytest
import torch.multiprocessing as mp

import guide_flow


def _method1(rank, world_size, init_method):
    import torch.distributed as dist

    import mori

    guide_flow.method1_torch_group(rank, world_size, init_method)
    guide_flow.quick_reference(rank, world_size)
    guide_flow.misuse_after_init()
    mori.shmem.shmem_finalize()
    dist.destroy_process_group()


def _method2(rank, world_size, queue):
    import mori

    def share(unique_id):  # rank 0 hands its ID to the others through the parent's queue
        if unique_id is not None:
            for _ in range(world_size - 1):
                queue.put(unique_id)
            return unique_id
        return queue.get()

    guide_flow.method2_unique_id(rank, world_size, share)
    guide_flow.quick_reference(rank, world_size)
    mori.shmem.shmem_finalize()


@pytest.mark.parametrize("nprocs", [2, 4])
def test_method1_torch_process_group(nprocs, tmp_path):
    init_method = f"file://{tmp_path}/store"
    mp.spawn(_method1, args=(nprocs, init_method), nprocs=nprocs)


@pytest.mark.parametrize("nprocs", [2, 4])
def test_method2_unique_id(nprocs):
    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(_method2, args=(nprocs, queue), nprocs=nprocs)
