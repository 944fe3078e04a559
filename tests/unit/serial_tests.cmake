# Read by ctest after the discovered unit tests (tests/CMakeLists.txt): the engine's 256-lane wrap stress takes both
# cores (256 threads spinning on 2), so each runs alone. Two at once under ctest -j2 took 100-250 s each where one
# alone takes 20-55 s. A renamed test makes ctest fail here, naming it.
# mori_unit_tests_TESTS is the discovery's list: empty before the executable is built.
if(NOT mori_unit_tests_TESTS)
  return()
endif()
foreach(_nic IN ITEMS mlx5 bnxt ionic)
  set_tests_properties(
    "unit.engine ${_nic}: 256 lanes post >100k requests (10k under a sanitizer) through a 64-entry SQ, byte-exact"
    PROPERTIES PROCESSORS 2)
endforeach()
