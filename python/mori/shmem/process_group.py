"""Initialisation over a torch.distributed process group (the guide's Method 1).

The runtime's bootstrap (allgather, broadcast, barrier of a few setup bytes) runs as collectives
of the group on CPU byte tensors, so the group needs a CPU backend (gloo). The group is looked up
by name: first among the names given to ``register_process_group``, then, on a torch that has
one, in torch's own registry (``torch._C._distributed_c10d._register_process_group``, which
torch 1.13 lacks).
"""

import weakref

from mori import _mori_shmem

# Weak, as torch's own registry is emptied by destroy_process_group: a strong reference here kept
# a destroyed gloo group, and its worker threads, alive into interpreter shutdown, where a worker
# releasing its last tensors takes the GIL, is ended by Python, and aborts the process.
_groups = weakref.WeakValueDictionary()


def register_process_group(name, group):
    """Makes ``group`` (a torch.distributed ProcessGroup) known to
    ``shmem_torch_process_group_init`` as ``name``, replacing any group of that name.

    This stands in for ``torch._C._distributed_c10d._register_process_group(name, group)``,
    which the guide calls and torch 1.13 does not have. Like torch's registry, it holds the
    group weakly: once ``dist.destroy_process_group`` has dropped it, the name is gone.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("register_process_group: name must be a non-empty str")
    if group is None:
        raise ValueError("register_process_group: group is None (use dist.group.WORLD)")
    _groups[name] = group


def _resolve(name):
    group = _groups.get(name)
    if group is not None:
        return group
    import torch.distributed as dist

    resolve = getattr(dist.distributed_c10d, "_resolve_process_group", None)
    if resolve is not None:
        try:
            return resolve(name)
        except (KeyError, RuntimeError, ValueError):
            pass
    known = ", ".join(repr(n) for n in sorted(_groups)) or "none"
    raise RuntimeError(
        f"shmem_torch_process_group_init: no process group is registered as {name!r} "
        f"(registered: {known}); register it with mori.shmem.register_process_group(name, group)"
    )


class _GroupChannel:
    """The byte collectives of the runtime's bootstrap (python/src/py_bootstrap.hpp) over a
    torch.distributed group. Every PE makes every call, with the same sizes."""

    def __init__(self, group):
        import torch
        import torch.distributed as dist

        self._torch, self._dist, self._group = torch, dist, group
        self._ranks = dist.get_process_group_ranks(group)  # group rank -> global rank

    def _tensor(self, data):
        return self._torch.frombuffer(bytearray(data), dtype=self._torch.uint8)

    def allgather(self, data):
        if not data:
            return b""
        mine = self._tensor(data)
        out = [self._torch.empty_like(mine) for _ in self._ranks]
        self._dist.all_gather(out, mine, group=self._group)
        return self._torch.cat(out).numpy().tobytes()

    def broadcast(self, data, root):
        if not data:
            return b""
        buf = self._tensor(data)
        self._dist.broadcast(buf, src=self._ranks[root], group=self._group)
        return buf.numpy().tobytes()

    def barrier(self):
        self._dist.barrier(group=self._group)


def shmem_torch_process_group_init(name):
    """Collective over the group registered as ``name``: initialises shmem with the group's
    ranks as PEs. Returns 0; raises RuntimeError naming the cause."""
    group = _resolve(name)
    import torch.distributed as dist

    if not dist.is_initialized():
        raise RuntimeError("shmem_torch_process_group_init: torch.distributed is not initialised")
    rank, size = dist.get_rank(group), dist.get_world_size(group)
    if rank < 0:
        raise RuntimeError(
            f"shmem_torch_process_group_init: this process is not a member of group {name!r}"
        )
    return _mori_shmem._init_with_channel(
        "shmem_torch_process_group_init", _GroupChannel(group), rank, size
    )
