cmake_policy(VERSION 3.25)
# harness.cmake.*: mori_test_group_unavailable (cmake/MoriTestGroups.cmake) fails the configure step naming the
# group, why and the way out, unless the group is in MORI_SKIP_TEST_GROUPS. Run with cmake -DSKIP=<list> -P.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/MoriTestGroups.cmake)
set(MORI_SKIP_TEST_GROUPS "${SKIP}")
mori_test_group_unavailable(format "no " "clang-format-19")
message(STATUS "configure went on")
