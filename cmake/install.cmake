# `cmake --install` and `cpack`: the layout the installed `idlescope run` expects, and a
# relocatable tarball for a GPU machine that cannot build idlescope.
#
#   PREFIX/bin/idlescope             the CLI, statically linked (cmake/static_cli.cmake): runs on
#                                    any x86_64 Linux; `idlescope run` preloads
#                                    <bin>/../lib/libidlescope.so
#   PREFIX/bin/dask_report.py        the analysis on a Dask cluster (docs/scale-out.md); finds
#                                    the idlescope beside it
#   PREFIX/lib/libidlescope.so       the preload library (needs only glibc >= 2.17 and its
#                                    loader: cmake/glibc_floor.cmake)
#   PREFIX/share/doc/idlescope/      README.md and docs/
#
# Both binaries are installed without their DWARF debug information (objcopy --strip-debug: a
# tenth of the size; the symbol table stays, so a backtrace and the recorder's own symbolizer
# still name every function) and with it beside them, in <file>.debug, which they name in a
# .gnu_debuglink section: gdb finds it there by itself.
#
# `cpack` (in the build directory) packs the same into idlescope-VERSION-Linux-ARCH.tar.gz; unpack
# it anywhere and run bin/idlescope.

install(TARGETS idlescope RUNTIME DESTINATION bin)
set(IDLESCOPE_INSTALLED_BINARIES bin/$<TARGET_FILE_NAME:idlescope>)
if(TARGET idlescope_preload)
  install(TARGETS idlescope_preload LIBRARY DESTINATION lib)
  list(APPEND IDLESCOPE_INSTALLED_BINARIES lib/$<TARGET_FILE_NAME:idlescope_preload>)
endif()
install(PROGRAMS ${CMAKE_SOURCE_DIR}/tools/dask_report.py DESTINATION bin)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION share/doc/idlescope)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION share/doc/idlescope/docs)

# The debug information out of the installed binaries, into <file>.debug beside each.
if(CMAKE_OBJCOPY)
  install(CODE "
    set(objcopy \"${CMAKE_OBJCOPY}\")
    set(binaries \"${IDLESCOPE_INSTALLED_BINARIES}\")
    foreach(binary IN LISTS binaries)
      set(file \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/\${binary}\")
      get_filename_component(name \"\${file}\" NAME)
      get_filename_component(dir \"\${file}\" DIRECTORY)
      message(STATUS \"Splitting debug information: \${file}.debug\")
      # --add-gnu-debuglink records the file's name and CRC: run where the .debug file lies.
      execute_process(COMMAND \${objcopy} --only-keep-debug \${name} \${name}.debug
                      COMMAND_ERROR_IS_FATAL ANY WORKING_DIRECTORY \${dir})
      execute_process(COMMAND \${objcopy} --strip-debug --add-gnu-debuglink=\${name}.debug
                              \${name} WORKING_DIRECTORY \${dir} COMMAND_ERROR_IS_FATAL ANY)
    endforeach()
  ")
endif()

set(CPACK_GENERATOR TGZ)
set(CPACK_PACKAGE_NAME idlescope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_FILE_NAME "idlescope-${PROJECT_VERSION}-Linux-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "idlescope: why GPUs sit idle")
set(CPACK_RESOURCE_FILE_README ${CMAKE_SOURCE_DIR}/README.md)
include(CPack)
