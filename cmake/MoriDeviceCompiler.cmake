# The device compiler and LLVM tools of each AMDGPU arch, and the default GPU_TARGETS.
#
# clang-19 (MORI_DEVICE_CXX) compiles gfx942 and gfx90a. gfx950 (MI355X) is unknown to it ("invalid target ID"), so
# clang-22 compiles gfx950, and only gfx950: LLVM reads older bitcode, never newer, so a bitcode built by clang-22
# cannot be linked by the LLVM 19 tools, nor by the older LLVMs of ROCm and Triton (docs/bitcode.md). The shell
# scripts that take an arch (tools/, bench/, tests/) use the same table: tools/device_toolchain.sh.
#
#   mori_device_llvm_version_for(<arch> <out_var>)   the LLVM major version that compiles <arch>: 22 or 19
#   mori_device_cxx_for(<arch> <out_var>)            the clang++ for <arch> (MORI_DEVICE_CXX_22 or MORI_DEVICE_CXX)
#   mori_device_cxx_for_all(<arch list> <out_var>)   the clang++ for one compile that targets every arch of the list
#                                                    (a HIP fat binary): the newest the list needs
#   mori_llvm_tool_for(<arch> <tool> <out_var>)      <tool>-<version> of that LLVM (llvm-link, ld.lld, llvm-objdump,
#                                                    llvm-readelf, llc, ...): its path, or a -NOTFOUND value
#   mori_gpu_test_labels(<arch> <label> <out_var>)   the ctest labels of <arch>'s checks in group <label>: <label>
#                                                    alone for the main lane's archs, "<label>;slow" for the others
#
# Sets GPU_TARGETS (cache): "gfx942;gfx90a;gfx950" where clang++-22 is found, else "gfx942;gfx90a" with one line
# saying so; a GPU_TARGETS that names gfx950 without clang++-22 stops the configure, naming the package.

find_program(MORI_DEVICE_CXX NAMES clang++-19 clang++ DOC "clang++ able to target amdgcn (gfx942, gfx90a)")
find_program(MORI_DEVICE_CXX_22 NAMES clang++-22 DOC "clang++ for the archs clang-19 lacks (gfx950)")
set(MORI_DEVICE_LLVM22_ARCHS gfx950)

function(mori_device_llvm_version_for arch out)
  if(arch IN_LIST MORI_DEVICE_LLVM22_ARCHS)
    set(${out} 22 PARENT_SCOPE)
  else()
    set(${out} 19 PARENT_SCOPE)
  endif()
endfunction()

function(mori_device_cxx_for arch out)
  mori_device_llvm_version_for(${arch} _version)
  if(_version STREQUAL "22")
    set(${out} ${MORI_DEVICE_CXX_22} PARENT_SCOPE)
  else()
    set(${out} ${MORI_DEVICE_CXX} PARENT_SCOPE)
  endif()
endfunction()

function(mori_device_cxx_for_all archs out)
  set(_cxx ${MORI_DEVICE_CXX})
  foreach(_arch IN LISTS archs)
    mori_device_llvm_version_for(${_arch} _version)
    if(_version STREQUAL "22")
      set(_cxx ${MORI_DEVICE_CXX_22})
    endif()
  endforeach()
  set(${out} ${_cxx} PARENT_SCOPE)
endfunction()

function(mori_llvm_tool_for arch tool out)
  mori_device_llvm_version_for(${arch} _version)
  string(MAKE_C_IDENTIFIER "MORI_TOOL_${tool}_${_version}" _var)
  find_program(${_var} NAMES ${tool}-${_version})
  set(${out} ${${_var}} PARENT_SCOPE)
endfunction()

# The main lane (CI) runs the checks of the first GPU_TARGETS arch and of gfx950: gfx950 is compiled by another LLVM,
# whose code the first arch's checks do not cover. The other archs' checks carry the label slow (docs/testing.md):
# they compile the same source paths with the same LLVM as the first.
function(mori_gpu_test_labels arch label out)
  list(GET GPU_TARGETS 0 _first)
  if(arch STREQUAL _first OR arch IN_LIST MORI_DEVICE_LLVM22_ARCHS)
    set(${out} ${label} PARENT_SCOPE)
  else()
    set(${out} "${label};slow" PARENT_SCOPE)
  endif()
endfunction()

# ---- GPU_TARGETS ------------------------------------------------------------------------------------------------
# A GPU_TARGETS left at its default follows the toolchain: it gains gfx950 once clang++-22 is installed (and loses
# it if clang++-22 goes). One the user set is kept as given.
set(_mori_default_targets "gfx942;gfx90a")
if(MORI_DEVICE_CXX_22)
  list(APPEND _mori_default_targets gfx950)
endif()
if(DEFINED CMAKE_HIP_ARCHITECTURES AND CMAKE_HIP_ARCHITECTURES)
  set(GPU_TARGETS "${CMAKE_HIP_ARCHITECTURES}" CACHE STRING "" FORCE)
elseif(DEFINED CACHE{GPU_TARGETS} AND DEFINED CACHE{_MORI_GPU_TARGETS_DEFAULT}
       AND "$CACHE{GPU_TARGETS}" STREQUAL "$CACHE{_MORI_GPU_TARGETS_DEFAULT}")
  set_property(CACHE GPU_TARGETS PROPERTY VALUE "${_mori_default_targets}")
endif()
set(GPU_TARGETS "${_mori_default_targets}" CACHE STRING "AMDGPU architectures to build device code for")
set(_MORI_GPU_TARGETS_DEFAULT "${_mori_default_targets}" CACHE INTERNAL "the GPU_TARGETS default last applied")
if(NOT MORI_DEVICE_CXX_22)
  set(_mori_new_archs)
  foreach(_arch IN LISTS GPU_TARGETS)
    if(_arch IN_LIST MORI_DEVICE_LLVM22_ARCHS)
      list(APPEND _mori_new_archs ${_arch})
    endif()
  endforeach()
  if(_mori_new_archs)
    message(FATAL_ERROR "GPU_TARGETS names ${_mori_new_archs}, which clang-19 cannot compile, and clang++-22 is "
                        "not found: install the Debian package clang-22 (with lld-22 and llvm-22; "
                        "scripts/install-deps.sh), or leave ${_mori_new_archs} out of GPU_TARGETS")
  endif()
  message(STATUS "GPU_TARGETS leaves gfx950 out: clang++-22 is not found (Debian package clang-22)")
endif()
