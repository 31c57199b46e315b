# `cmake --install` and `cpack`: the layout the installed `idlescope run` expects, and a
# relocatable tarball for a GPU machine that cannot build idlescope.
#
#   PREFIX/bin/idlescope             the CLI; `idlescope run` preloads <bin>/../lib/libidlescope.so
#   PREFIX/lib/libidlescope.so       the preload library (needs only libc and the loader)
#   PREFIX/lib/idlescope/            the CLI's own libprotobuf and libabsl_* (IDLESCOPE_BUNDLE_LIBS):
#                                    a stock CUDA image has neither; found through the CLI's
#                                    DT_RPATH $ORIGIN/../lib/idlescope, which (unlike RUNPATH) also
#                                    serves their dependencies on each other, so the traced job's
#                                    environment is never touched
#   PREFIX/share/doc/idlescope/      README.md and docs/
#
# `cpack` (in the build directory) packs the same into idlescope-VERSION-Linux-ARCH.tar.gz; unpack
# it anywhere and run bin/idlescope.
option(IDLESCOPE_BUNDLE_LIBS "Install the CLI's protobuf and abseil libraries beside it" ON)

install(TARGETS idlescope RUNTIME DESTINATION bin)
if(TARGET idlescope_preload)
  install(TARGETS idlescope_preload LIBRARY DESTINATION lib)
endif()
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION share/doc/idlescope)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION share/doc/idlescope/docs)

if(IDLESCOPE_BUNDLE_LIBS)
  set_target_properties(idlescope PROPERTIES INSTALL_RPATH "$ORIGIN/../lib/idlescope")
  target_link_options(idlescope PRIVATE -Wl,--disable-new-dtags)
  # The libraries by their sonames (what the CLI's DT_NEEDED names), with the files the soname
  # links point to: FOLLOW_SYMLINK_CHAIN installs both.
  install(CODE [[
    file(GET_RUNTIME_DEPENDENCIES
         EXECUTABLES $<TARGET_FILE:idlescope>
         RESOLVED_DEPENDENCIES_VAR idlescope_deps
         PRE_INCLUDE_REGEXES "libprotobuf" "libabsl_"
         PRE_EXCLUDE_REGEXES ".*"
         POST_INCLUDE_REGEXES "libprotobuf" "libabsl_"
         POST_EXCLUDE_REGEXES ".*")
    file(INSTALL ${idlescope_deps} DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/idlescope"
         FOLLOW_SYMLINK_CHAIN)
  ]])
endif()

set(CPACK_GENERATOR TGZ)
set(CPACK_PACKAGE_NAME idlescope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_FILE_NAME "idlescope-${PROJECT_VERSION}-Linux-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "idlescope: why GPUs sit idle")
set(CPACK_RESOURCE_FILE_README ${CMAKE_SOURCE_DIR}/README.md)
include(CPack)
