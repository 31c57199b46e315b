# Done-when 5: a non-trace file, an empty file and a file of random bytes each give a one-line
# error and a non-zero exit, never a crash (a signal shows as a non-numeric result).
#   cmake -DIDLESCOPE=<binary> -DWORK_DIR=<dir> -P bad_input.cmake
file(MAKE_DIRECTORY ${WORK_DIR})
file(WRITE ${WORK_DIR}/not_a_trace.txt "hello, this is not a trace\n")
file(WRITE ${WORK_DIR}/empty.idlescope "")
string(RANDOM LENGTH 4096 RANDOM_SEED 7 random_text)
file(WRITE ${WORK_DIR}/random.idlescope "${random_text}")
# Random bytes that start like a packet (tag 0x0a) with a huge length.
string(ASCII 10 255 255 255 255 15 tag_and_length)
file(WRITE ${WORK_DIR}/random_framed.idlescope "${tag_and_length}${random_text}")
file(MAKE_DIRECTORY ${WORK_DIR}/empty_dir)
foreach(input not_a_trace.txt empty.idlescope random.idlescope random_framed.idlescope
              empty_dir missing.idlescope)
  execute_process(
    COMMAND ${IDLESCOPE} report ${WORK_DIR}/${input}
    RESULT_VARIABLE status
    OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  if(NOT status MATCHES "^[0-9]+$" OR status EQUAL 0)
    message(FATAL_ERROR "${input}: expected a non-zero exit status, got '${status}'")
  endif()
  string(STRIP "${err}" err)
  string(FIND "${err}" "\n" newline)
  if(NOT newline EQUAL -1 OR err STREQUAL "")
    message(FATAL_ERROR "${input}: expected a one-line error, got:\n${err}")
  endif()
  if(NOT out STREQUAL "")
    message(FATAL_ERROR "${input}: expected no report on stdout, got:\n${out}")
  endif()
  message(STATUS "${input}: exit ${status}: ${err}")
endforeach()
