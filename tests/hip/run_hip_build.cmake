# Configures, builds and tests mori with MORI_BACKEND=hip in a sub-build (cmake -P script), from the host build's
# ctest. The sub-build's own tests (label hip) check that init fails cleanly without a GPU (Debian's libamdhip64), and
# run the hip runtime path against the stand-in libamdhip64 (tests/hip/standin). Only what they need is built: the
# runtime library for the hip backend, the stand-in and the two test binaries (the rest of the tree's targets are the host
# build's, and building them again here cost five minutes of CI).
# TARGETS: the host build's GPU_TARGETS, comma-separated: the archs of the stream kernel.
# ONE_TYPE: ON builds the stream kernel's reductions for float alone (MORI_STREAM_REDUCE_ONE_TYPE): the stand-in
# loads the code object and records its launches but runs none, and the reductions of every type are 4 of the kernel's
# 4.5 min of clang-19. The slow lane's run builds the kernel whole.
if(NOT DEFINED ONE_TYPE)
  set(ONE_TYPE OFF)
endif()
if(NOT TARGETS)
  set(TARGETS gfx942)
endif()
string(REPLACE "," ";" _targets "${TARGETS}")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BUILD} -G ${GENERATOR} -DMORI_BACKEND=hip
                        "-DGPU_TARGETS=${_targets}"
                        -DMORI_BUILD_DEVICE_TESTS=OFF -DMORI_BUILD_BENCH=OFF -DMORI_BUILD_EXAMPLES=OFF
                        -DMORI_STREAM_REDUCE_ONE_TYPE=${ONE_TYPE}
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD} --target mori_shmem mori_hip_tests mori_hip_standin_tests COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --output-on-failure --no-tests=error -L hip WORKING_DIRECTORY ${BUILD}
                COMMAND_ERROR_IS_FATAL ANY)
