"""Defaults for running these tests by hand (ctest sets the same): a small heap and deadlines, so
that a broken run fails instead of hanging. Spawned PEs inherit them."""

import os

os.environ.setdefault("MORI_SHMEM_HEAP_SIZE", "64M")
os.environ.setdefault("MORI_SHMEM_BOOTSTRAP_TIMEOUT", "20")
os.environ.setdefault("MORI_SHMEM_TIMEOUT_MS", "20000")
