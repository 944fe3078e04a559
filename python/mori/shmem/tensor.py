"""Symmetric memory seen as a torch.Tensor.

On the host backend a PE's heap, and every peer heap that ``shmem_ptr_p2p`` maps, is ordinary
memory of this process, so a CPU tensor can view it without a copy. Writes through the view of a
peer's address land in that peer's memory; ``shmem_barrier_all`` makes them visible to it.
"""

import ctypes
import math

from mori import _mori_shmem


def tensor(ptr, shape, dtype):
    """A CPU ``torch.Tensor`` of ``shape`` and ``dtype`` over the memory at ``ptr``, no copy.

    ``ptr`` is an address valid in this process: from ``shmem_malloc*``, ``shmem_ptr_p2p``, or a
    registered buffer. The view does not own the memory: do not use it after ``shmem_free`` or
    ``shmem_finalize``. Through DLPack (``torch.utils.dlpack.to_dlpack``) the same memory reaches
    other frameworks.
    """
    import torch

    if _mori_shmem.backend != "host":
        raise NotImplementedError(
            f"mori.shmem.tensor: views CPU memory of the host backend, not {_mori_shmem.backend}"
        )
    if not ptr:
        raise ValueError(
            "mori.shmem.tensor: ptr is 0 (no allocation, or a PE that shmem_ptr_p2p "
            "reaches over RDMA)"
        )
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    count = math.prod(shape)
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    nbytes = count * torch.empty((), dtype=dtype).element_size()
    buffer = (ctypes.c_char * nbytes).from_address(ptr)
    return torch.frombuffer(buffer, dtype=dtype, count=count).view(shape)
