# Runs one fuzzer for ctest (tests/fuzz/CMakeLists.txt):
#   cmake -DMODE=replay -DFUZZER=<exe> -DNAME=<fuzzer> -DCORPUS=<dir> -DCRASHES=<dir> -P run_fuzzer.cmake
#     executes every file of the checked-in corpus and crash directories once; any crash fails,
#     and so do no inputs at all or a fuzzer that reports executing fewer than it was given.
#   cmake -DMODE=run ... -DWORK=<dir> -DSECONDS=<s> [-DMIN_EXECUTIONS=<n>] -P run_fuzzer.cmake
#     fuzzes for SECONDS from the checked-in corpus (read only) and WORK/corpus (where new inputs
#     go), then prints the executions (libFuzzer's stat::number_of_executed_units, or its
#     `#N DONE` line) and writes them to WORK/summary.txt. A crash fails the test and names the
#     input to check in; so does a run that executed fewer than MIN_EXECUTIONS inputs (default
#     1000), or whose executions cannot be read: a fuzzer that runs nothing must not pass.
cmake_minimum_required(VERSION 3.25)

if(MODE STREQUAL "replay")
  set(_inputs)
  foreach(_dir IN ITEMS ${CORPUS} ${CRASHES})
    if(IS_DIRECTORY ${_dir})
      file(GLOB _files LIST_DIRECTORIES false ${_dir}/*)
      foreach(_file IN LISTS _files)
        get_filename_component(_base ${_file} NAME)
        if(NOT _base MATCHES "^(README|\\.)")
          list(APPEND _inputs ${_file})
        endif()
      endforeach()
    endif()
  endforeach()
  list(LENGTH _inputs _count)
  if(_count EQUAL 0)
    message(FATAL_ERROR "${NAME}: no checked-in inputs to replay, and a replay of nothing proves "
                        "nothing. Looked in ${CORPUS} and ${CRASHES}; scripts/fuzz.sh "
                        "--update-corpus writes a corpus.")
  endif()
  # Given files, libFuzzer runs each once and exits non-zero on the first failure.
  execute_process(COMMAND ${FUZZER} -runs=1 ${_inputs} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out
                  ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${NAME}: a checked-in input fails (exit ${_rc}):\n${_out}")
  endif()
  # libFuzzer says `Executed <file> in N ms` for each input it ran.
  string(REGEX MATCHALL "Executed [^\n]* in [0-9]+ ms" _executed "${_out}")
  list(LENGTH _executed _ran)
  if(_ran LESS _count)
    message(FATAL_ERROR "${NAME}: given ${_count} checked-in inputs, the fuzzer executed ${_ran}:\n"
                        "${_out}")
  endif()
  message(STATUS "${NAME}: replayed ${_count} checked-in inputs")
elseif(MODE STREQUAL "run")
  file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
  set(_seeds)
  foreach(_dir IN ITEMS ${CORPUS} ${CRASHES})
    if(IS_DIRECTORY ${_dir})
      list(APPEND _seeds ${_dir})
    endif()
  endforeach()
  execute_process(
    COMMAND ${FUZZER} ${WORK}/corpus ${_seeds} -max_total_time=${SECONDS} -print_final_stats=1
            -timeout=10 -rss_limit_mb=2048 -artifact_prefix=${WORK}/artifacts/
    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  file(WRITE ${WORK}/log.txt "${_out}")
  if(NOT DEFINED MIN_EXECUTIONS)
    set(MIN_EXECUTIONS 1000)
  endif()
  string(REGEX MATCH "stat::number_of_executed_units: *([0-9]+)" _ "${_out}")
  set(_execs "${CMAKE_MATCH_1}")
  if(_execs STREQUAL "")
    string(REGEX MATCH "#([0-9]+)[ \t]+DONE" _ "${_out}")
    set(_execs "${CMAKE_MATCH_1}")
  endif()
  if(_execs STREQUAL "")
    set(_execs "?")
  endif()
  set(_summary "${NAME}: ${_execs} executions in ${SECONDS} s")
  file(WRITE ${WORK}/summary.txt "${_summary}\n")
  message(STATUS "${_summary}")
  if(NOT _rc EQUAL 0)
    file(GLOB _artifacts ${WORK}/artifacts/*)
    message(FATAL_ERROR
            "${NAME} failed (exit ${_rc}). Reproduce with `${FUZZER} <input>`; once fixed, check "
            "the input in as tests/fuzz/crashes/${NAME}/<name> (tests/fuzz/crashes/README.md).\n"
            "Inputs: ${_artifacts}\nLog: ${WORK}/log.txt\n${_out}")
  endif()
  if(_execs STREQUAL "?")
    message(FATAL_ERROR "${NAME}: no execution count in the fuzzer's output (neither "
                        "stat::number_of_executed_units nor `#N DONE`): did it run?\n"
                        "Log: ${WORK}/log.txt\n${_out}")
  endif()
  if(_execs LESS MIN_EXECUTIONS)
    message(FATAL_ERROR "${NAME}: ${_execs} executions in ${SECONDS} s, fewer than the minimum "
                        "${MIN_EXECUTIONS} (MORI_FUZZ_MIN_EXECUTIONS): the fuzzer barely ran.\n"
                        "Log: ${WORK}/log.txt\n${_out}")
  endif()
else()
  message(FATAL_ERROR "run_fuzzer.cmake: MODE must be replay or run, not '${MODE}'")
endif()
