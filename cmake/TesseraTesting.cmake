# The one way tests are registered: every ctest entry gets a label here (README lists them:
# data, tier0, tier1, tier2, checked, plan, reduce, reliability, conformance, build, examples,
# tour), so `ctest -L <label>` selects any part of the suite.

# tessera_tests: every target the ctest suite runs, and nothing else. The workflow presets
# build it instead of `all` (the benchmarks beside the tour have no test; `cmake --build
# --preset <name>` still builds everything).
if(NOT TARGET tessera_tests)
  add_custom_target(tessera_tests)
endif()

# tessera_add_test(NAME <name> LABEL <label> COMMAND <command...> [PROPERTIES <prop value...>])
#   The program it runs (a target as the command's first word, or $<TARGET_FILE:target>
#   anywhere in it) joins tessera_tests. Other target names in the command are arguments (a
#   compile-fail test's target is built by the test itself, and must fail to compile).
function(tessera_add_test)
  cmake_parse_arguments(T "" "NAME;LABEL" "COMMAND;PROPERTIES" ${ARGN})
  if(NOT T_NAME OR NOT T_LABEL OR NOT T_COMMAND)
    message(FATAL_ERROR "tessera_add_test: NAME, LABEL and COMMAND are required (got ${ARGN})")
  endif()
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABEL}" ${T_PROPERTIES})
  list(GET T_COMMAND 0 program)
  if(TARGET "${program}")
    add_dependencies(tessera_tests "${program}")
  endif()
  foreach(word IN LISTS T_COMMAND)
    if(word MATCHES "\\$<TARGET_FILE:([^>]+)>")
      add_dependencies(tessera_tests "${CMAKE_MATCH_1}")
    endif()
  endforeach()
endfunction()

# tessera_add_doctest(<target> <label>)
#   Host builds: every doctest case of <target> is its own ctest test, "<target>: <case>"
#   (listed after the build). Device builds (CUDA, HIP) cannot run the executable at build time,
#   so it is one ctest test there.
function(tessera_add_doctest target label)
  if(TESSERA_DEVICE_BUILD)
    tessera_add_test(NAME ${target} LABEL ${label} COMMAND ${target})
  else()
    include(doctest)
    doctest_discover_tests(${target} TEST_PREFIX "${target}: " PROPERTIES LABELS "${label}")
    add_dependencies(tessera_tests ${target})
  endif()
endfunction()

# TESSERA_TESTS_DEVICE_PASSES_ONLY (CUDA and HIP builds; CI's CUDA and HIP stages, where nothing
# runs): the test units, and the examples every other stage builds whole and runs, go through the
# device compilation only, as object libraries: no host translation, no host compiler pass, no
# link. CUDA: nvcc -cubin -G (device preprocessing, cicc — the EDG front end over the whole unit
# in device mode, which instantiates every kernel the host code launches, then NVVM — and
# ptxas, as a device-debug build would); device-code errors (a __host__ function called from a
# kernel, an extended lambda's restrictions) are cicc's and reported the same. HIP: clang's
# --cuda-device-only (the unit compiled for the GPU architecture alone). One unit, test_scan, on
# a 2-core Zen 4: 92 s through nvcc -cuda (host translation included), 67 with -cubin, 37 with
# -cubin -G; example 03 on a 2-core Zen 3: 38 s whole and 12 device only with nvcc, 32 and 12
# with hipcc. The tour, examples 00 (README's), 01 (tile kernels) and 09 (per-thread kernels),
# and the header checks still build whole, device code optimized as users get it; the
# benchmarks beside the tour (built whole by CI's emulation stage) go through the device passes
# too, and the test main (which nothing links then) is only its usage requirements.
option(TESSERA_TESTS_DEVICE_PASSES_ONLY
       "CUDA and HIP builds: compile the tests and most examples through the device compilation only (no host pass, no link)" OFF)
if(TESSERA_TESTS_DEVICE_PASSES_ONLY AND NOT "CUDA" IN_LIST TESSERA_KOKKOS_DEVICES
   AND NOT "HIP" IN_LIST TESSERA_KOKKOS_DEVICES)
  message(FATAL_ERROR "TESSERA_TESTS_DEVICE_PASSES_ONLY needs a CUDA or HIP build (Kokkos "
                      "devices: ${TESSERA_KOKKOS_DEVICES})")
endif()
# tessera_test_executable(<target> <sources...>): an executable, or under
# TESSERA_TESTS_DEVICE_PASSES_ONLY an object library of device code only (registered with ctest
# by the caller only when TESSERA_TESTS_DEVICE_PASSES_ONLY is off).
function(tessera_test_executable target)
  if(NOT TESSERA_TESTS_DEVICE_PASSES_ONLY)
    add_executable(${target} ${ARGN})
    return()
  endif()
  add_library(${target} OBJECT ${ARGN})
  if("CUDA" IN_LIST TESSERA_KOKKOS_DEVICES)
    set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER
                                               "${CMAKE_COMMAND};-E;env;NVCC_APPEND_FLAGS=-cubin -G")
  else()
    target_compile_options(${target} PRIVATE --cuda-device-only)
  endif()
endfunction()
