# Installs Tessera from TESSERA_BINARY_DIR into WORK_DIR/prefix, then configures, builds and runs
# the consumer project in CONSUMER_SOURCE_DIR against it with find_package(Tessera).
# Cross builds pass TOOLCHAIN_FILE (used for the consumer too) and EMULATOR (runs its programs;
# a command with arguments, separated by '|').
string(REPLACE "|" ";" EMULATOR "${EMULATOR}")
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: command failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${TESSERA_BINARY_DIR} --prefix ${WORK_DIR}/prefix)
set(toolchain "")
if(TOOLCHAIN_FILE)
  set(toolchain -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN_FILE})
endif()
run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build -G Ninja
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DKokkos_DIR=${KOKKOS_DIR} ${toolchain})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${EMULATOR} ${WORK_DIR}/build/consumer)
run(${EMULATOR} ${WORK_DIR}/build/consumer_eigen)
