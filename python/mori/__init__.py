"""mori: OpenSHMEM-style symmetric memory for AMD GPU kernels.

``mori.shmem`` is the host API of the user guide (init, queries, symmetric memory, barriers);
``mori.ir`` describes the device bitcode and its ABI manifest for Triton, FlyDSL and MLIR front
ends.
See docs/python.md.
"""

from mori import ir, shmem

__version__ = shmem.version
__all__ = ["ir", "shmem", "__version__"]
