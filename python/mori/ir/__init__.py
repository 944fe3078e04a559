"""mori.ir: the device bitcode and its ABI manifest, for front ends that declare and link mori's
``extern "C"`` device functions (Triton, FlyDSL, MLIR; docs/bitcode.md).

The files are those ``tools/build_shmem_bitcode.sh`` writes: ``libmori_shmem_device_<arch>.bc``
per GPU arch, ``libmori_shmem_device_host.bc`` for the host backend, and the manifest
``mori_shmem_device_abi.json``. They are found in the build tree's ``lib/`` or the install's
library directory, or in ``$MORI_BITCODE_DIR`` when that is set.
"""

import difflib
import functools
import json
import os
from pathlib import Path

from mori import _paths

MANIFEST = "mori_shmem_device_abi.json"
PREFIX = "mori_shmem_"


def library_dir():
    """The directory that holds the bitcode and the manifest."""
    override = os.environ.get("MORI_BITCODE_DIR")
    if override:
        return Path(override)
    return (Path(_paths.__file__).resolve().parent / _paths.BITCODE_DIR).resolve()


def architectures():
    """The archs with a bitcode file here: e.g. ``["gfx90a", "gfx942", "host"]``."""
    stem = "libmori_shmem_device_"
    found = library_dir().glob(stem + "*.bc")
    return sorted(p.name[len(stem) : -len(".bc")] for p in found)


def bitcode_path(arch="gfx942"):
    """The bitcode to link for ``arch`` (``"gfx942"``, ``"gfx90a"``, ... or ``"host"`` for the
    host backend's x86-64 flavour). Raises FileNotFoundError naming the archs that exist."""
    path = library_dir() / f"libmori_shmem_device_{arch}.bc"
    if not path.is_file():
        have = ", ".join(architectures()) or "none"
        raise FileNotFoundError(
            f"mori.ir: no bitcode for {arch!r} in {library_dir()} (have: {have}); "
            "build target mori_shmem_bitcode or set GPU_TARGETS"
        )
    return path


def manifest_path():
    """The JSON manifest of every device ABI function."""
    path = library_dir() / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(f"mori.ir: no {MANIFEST} in {library_dir()}")
    return path


@functools.lru_cache(maxsize=None)
def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def manifest():
    """The whole manifest as a dict: ``library``, ``mori_version``, ``device_state`` (the
    ``globalGpuStates`` symbol, its size and ABI version), ``enums`` and ``functions``."""
    return _load(str(manifest_path()))


def functions():
    """Every function as a dict: ``name``, ``family``, ``scope``, ``returns`` {type, llvm,
    status} and ``params`` [{name, type, llvm[, ext]}]."""
    return manifest()["functions"]


def function(name):
    """One function's entry, by its full name or without the ``mori_shmem_`` prefix."""
    full = name if name.startswith(PREFIX) else PREFIX + name
    by_name = {f["name"]: f for f in functions()}
    if full not in by_name:
        near = difflib.get_close_matches(full, by_name, n=3)
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise KeyError(f"mori.ir: no device function {full!r}{hint}")
    return by_name[full]


def _llvm_type(entry, ret=False):
    """``i8 signext`` for a parameter, ``signext i8`` for a result (LLVM's attribute places)."""
    ext = entry.get("ext")
    if not ext:
        return entry["llvm"]
    return f"{ext} {entry['llvm']}" if ret else f"{entry['llvm']} {ext}"


def llvm_declaration(name):
    """The LLVM IR declaration of a function, e.g.
    ``declare i32 @mori_shmem_int32_p(ptr, i32, i32, i32)``. Extension attributes (``signext``,
    ``zeroext``) are kept: calls must repeat them."""
    f = function(name)
    params = ", ".join(_llvm_type(p) for p in f["params"])
    return f"declare {_llvm_type(f['returns'], ret=True)} @{f['name']}({params})"
