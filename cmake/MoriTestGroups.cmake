# A test group that cannot be registered fails the configure step instead of vanishing from the suite with a
# warning. Each place that registers a group only when its tools are found calls
# mori_test_group_unavailable(<group> <why>) when they are not. Groups named in MORI_SKIP_TEST_GROUPS are left out
# on purpose, with a status line; scripts/test.sh also holds the suite to the README's test count.
set(MORI_SKIP_TEST_GROUPS "" CACHE STRING
    "Test groups (ctest labels: device, bitcode, format, python) to leave out when their tools are missing")

function(mori_test_group_unavailable group)
  string(JOIN "" why ${ARGN})
  if(group IN_LIST MORI_SKIP_TEST_GROUPS)
    message(STATUS "tests: the ${group} group is left out (MORI_SKIP_TEST_GROUPS): ${why}")
    return()
  endif()
  message(FATAL_ERROR "tests: the ${group} group cannot be registered: ${why}. Install what it needs "
                      "(scripts/install-deps.sh), or leave the group out with -DMORI_SKIP_TEST_GROUPS=${group}")
endfunction()
