# Golden test of `idlescope report`: runs it on a checked-in trace directory and compares the
# output byte for byte with the expected file next to it. UPDATE_GOLDEN=1 in the environment
# rewrites the expected file instead (review the diff before committing it).
#   cmake -DIDLESCOPE=<binary> -DGOLDEN_DIR=<tests/golden> -DCASE=<name> -DFORMAT=json|text
#         -P golden.cmake
if(FORMAT STREQUAL "json")
  set(flags --format json)
  set(expected ${GOLDEN_DIR}/${CASE}.expected.json)
else()
  set(flags --format text)
  set(expected ${GOLDEN_DIR}/${CASE}.expected.txt)
endif()
# Relative input path: the report names its files, and must not depend on the checkout location.
execute_process(
  COMMAND ${IDLESCOPE} report ${flags} ${CASE}
  WORKING_DIRECTORY ${GOLDEN_DIR}
  RESULT_VARIABLE status
  OUTPUT_VARIABLE actual
  ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "idlescope report ${CASE} exited with ${status}: ${errors}")
endif()
if(DEFINED ENV{UPDATE_GOLDEN} AND "$ENV{UPDATE_GOLDEN}" STREQUAL "1")
  file(WRITE ${expected} "${actual}")
  message(STATUS "updated ${expected}")
  return()
endif()
if(NOT EXISTS ${expected})
  message(FATAL_ERROR "${expected} is missing: run with UPDATE_GOLDEN=1 to create it")
endif()
file(READ ${expected} wanted)
if(NOT actual STREQUAL wanted)
  set(actual_file ${CMAKE_CURRENT_BINARY_DIR}/${CASE}.actual.${FORMAT})
  file(WRITE ${actual_file} "${actual}")
  execute_process(COMMAND diff -u ${expected} ${actual_file})
  message(FATAL_ERROR "${CASE}: report differs from ${expected} (actual: ${actual_file}); "
                      "UPDATE_GOLDEN=1 ctest -R golden regenerates it")
endif()
