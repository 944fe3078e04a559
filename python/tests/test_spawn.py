"""The guide's Methods 1 and 2 with 2 and 4 PEs started by torch.multiprocessing.spawn."""

import pytest
import torch.multiprocessing as mp

import guide_flow


def _method1(rank, world_size, init_method):
    import gc
    import weakref

    import torch.distributed as dist

    import mori

    guide_flow.method1_torch_group(rank, world_size, init_method)
    guide_flow.quick_reference(rank, world_size)
    guide_flow.misuse_after_init()
    mori.shmem.shmem_finalize()
    # The failed calls above leave the group in reference cycles (their tracebacks): collect them
    # here, or a gloo worker thread that runs the collector later would destroy its own group.
    gc.collect()
    group = weakref.ref(dist.group.WORLD)
    dist.destroy_process_group()
    # mori's registry holds the group weakly, as torch's does: destroyed now, on this thread, not
    # at interpreter shutdown, where gloo's workers abort the process (torch 1.13).
    assert group() is None, "the destroyed process group is still referenced"
    with pytest.raises(RuntimeError, match="no process group is registered as 'default'"):
        mori.shmem.shmem_torch_process_group_init("default")


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
