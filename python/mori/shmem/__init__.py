"""mori.shmem: the user guide's shmem API (docs/python.md names the guide and the differences).

Every name of the guide is here with its meaning. Addresses are ``int``. A call that fails raises
``RuntimeError`` with the runtime's one-line reason, e.g. ``malloc_align: alignment 3 is not a
power of two``; nothing exits the process. Collective calls (init, finalize, malloc*, free,
buffer_(de)register, barrier_all) must be made by every PE in the same order.

Added to the guide: ``register_process_group`` (torch 1.13 has no process-group registry) and
``tensor`` (a ``torch.Tensor`` view of symmetric memory).
"""

from mori._mori_shmem import (
    MORI_SHMEM_INIT_WITH_MPI_COMM,
    MORI_SHMEM_INIT_WITH_UNIQUEID,
    backend,
    shmem_addr_accessible,
    shmem_barrier_all,
    shmem_buffer_deregister,
    shmem_buffer_register,
    shmem_buffer_register_symmetric,
    shmem_calloc,
    shmem_ext_alloc_shareable,
    shmem_ext_free_shareable,
    shmem_ext_malloc_with_flags,
    shmem_finalize,
    shmem_free,
    shmem_get_unique_id,
    shmem_info_get_name,
    shmem_info_get_version,
    shmem_init_attr,
    shmem_malloc,
    shmem_malloc_align,
    shmem_module_init,
    shmem_mype,
    shmem_npes,
    shmem_num_qp_per_pe,
    shmem_pe_accessible,
    shmem_ptr_p2p,
    shmem_realloc,
    version,
)
from mori.shmem.process_group import register_process_group, shmem_torch_process_group_init
from mori.shmem.tensor import tensor

__all__ = [
    "MORI_SHMEM_INIT_WITH_MPI_COMM",
    "MORI_SHMEM_INIT_WITH_UNIQUEID",
    "backend",
    "register_process_group",
    "shmem_addr_accessible",
    "shmem_barrier_all",
    "shmem_buffer_deregister",
    "shmem_buffer_register",
    "shmem_buffer_register_symmetric",
    "shmem_calloc",
    "shmem_ext_alloc_shareable",
    "shmem_ext_free_shareable",
    "shmem_ext_malloc_with_flags",
    "shmem_finalize",
    "shmem_free",
    "shmem_get_unique_id",
    "shmem_info_get_name",
    "shmem_info_get_version",
    "shmem_init_attr",
    "shmem_malloc",
    "shmem_malloc_align",
    "shmem_module_init",
    "shmem_mype",
    "shmem_npes",
    "shmem_num_qp_per_pe",
    "shmem_pe_accessible",
    "shmem_ptr_p2p",
    "shmem_realloc",
    "shmem_torch_process_group_init",
    "tensor",
    "version",
]
