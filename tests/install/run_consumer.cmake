# Configures, builds and runs tests/install/consumer against an installed mori (cmake -P script).
file(REMOVE_RECURSE ${BUILD})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BUILD} -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${PREFIX}
                        -DCMAKE_CXX_COMPILER=${CXX}
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD} COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND ${BUILD}/consumer OUTPUT_VARIABLE out COMMAND_ERROR_IS_FATAL ANY)
message(STATUS "consumer said: ${out}")
if(NOT out MATCHES "consumer ok")
  message(FATAL_ERROR "the consumer did not report success")
endif()
