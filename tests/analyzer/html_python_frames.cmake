# The HTML report names a Python job's evidence by its first user frame (issue 12): the golden
# python_frames job's checkpoint stack reads "/work/train.py:76 in save_checkpoint" first, and
# with --no-python-frames no script line is shown.
set(out ${CMAKE_CURRENT_BINARY_DIR}/python_frames.html)
foreach(mode python native)
  set(extra "")
  if(mode STREQUAL "native")
    set(extra --no-python-frames)
  endif()
  execute_process(COMMAND ${IDLESCOPE} report --quiet --format html -o ${out} ${extra}
                          ${GOLDEN_DIR}/python_frames
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "report --format html ${extra} failed (${rc}): ${err}")
  endif()
  file(READ ${out} page)
  string(FIND "${page}" "<b class=\"user-frame\">/work/train.py:76 in save_checkpoint</b>" at)
  if(mode STREQUAL "python" AND at EQUAL -1)
    message(FATAL_ERROR "the page does not name train.py:76 in save_checkpoint first")
  endif()
  if(mode STREQUAL "native" AND NOT at EQUAL -1)
    message(FATAL_ERROR "--no-python-frames still names the script line")
  endif()
endforeach()
