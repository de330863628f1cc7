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
