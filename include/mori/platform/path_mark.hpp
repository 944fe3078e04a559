// MORI_PATH_MARK("name"): a point of the device code that bench/isa_path.py can find in the
// compiled amdgcn assembly, to name which of a function's paths it measures (docs/bitcode.md,
// "Executed paths"). Compiled with -DMORI_ISA_PATH_MARKERS=1 on amdgcn it is an empty inline-asm
// statement, which llc prints as the comment line "; mori-path name"; everywhere else (release
// bitcode, the host backend) it is nothing. Being volatile, a mark is never duplicated, merged or
// removed, so it may cost a few instructions of the code around it: the markers bitcode measures
// paths, the release bitcode is what ships.
#pragma once

#include "mori/platform/macros.hpp"

#if defined(MORI_ISA_PATH_MARKERS) && MORI_ISA_PATH_MARKERS && defined(MORI_ON_AMDGCN) && \
    defined(MORI_DEVICE_PASS)
#define MORI_PATH_MARK(name) asm volatile("; mori-path " name)
#else
#define MORI_PATH_MARK(name) ((void)0)
#endif
