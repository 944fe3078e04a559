"""`cmake --install` puts a working package in the prefix's Python directory: it imports from there
alone, loads the installed libmori_shmem, and finds the installed bitcode and manifest."""

import os
import subprocess
import sys

import pytest

CHECK = """
import mori, sys
from mori import shmem
prefix = sys.argv[1]
assert mori.__file__.startswith(prefix), mori.__file__
uid = shmem.shmem_get_unique_id()
shmem.shmem_init_attr(shmem.MORI_SHMEM_INIT_WITH_UNIQUEID, 0, 1, uid)
assert shmem.shmem_malloc(4096) != 0
libs = [l.split()[-1] for l in open("/proc/self/maps") if "libmori_shmem" in l]
assert libs and all(l.startswith(prefix) for l in libs), libs
shmem.shmem_finalize()
if sys.argv[2] == "1":
    assert str(mori.ir.manifest_path()).startswith(prefix)
    assert mori.ir.bitcode_path("gfx942").is_file()
print("ok")
"""


def test_cmake_install(tmp_path):
    build, cmake = os.environ.get("MORI_BUILD_DIR"), os.environ.get("MORI_CMAKE", "cmake")
    if not build:
        pytest.skip("MORI_BUILD_DIR is not set (ctest sets it)")
    prefix = tmp_path / "prefix"
    subprocess.run([cmake, "--install", build, "--prefix", str(prefix)], check=True,
                   stdout=subprocess.DEVNULL)
    inits = list(prefix.glob("lib/python*/*-packages/mori/__init__.py"))
    assert len(inits) == 1, inits
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MORI_BITCODE_DIR")}
    env["PYTHONPATH"] = str(inits[0].parent.parent)
    bitcode = os.environ.get("MORI_TEST_BITCODE", "0")
    out = subprocess.run([sys.executable, "-c", CHECK, str(prefix), bitcode], env=env,
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
