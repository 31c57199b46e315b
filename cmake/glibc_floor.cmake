# idlescope_glibc_floor(<target> [SOURCES_ONLY] [HOOKS_PTHREAD_CREATE]): build a shared library so that it loads with any glibc from
# 2.17 on x86_64 (README.md, "Supported systems"), whatever the glibc it is built on. For the
# preload library, and for the copies of simgpu that tests/portability runs on an older system.
#
#   - interpose/glibc_floor.h, force-included into each of its sources: references to functions
#     that glibc 2.32/2.34 moved into libc.so.6 bind to their version of 2.17 (same code);
#   - -Wl,--wrap for the references .symver cannot reach (those of the static libstdc++ and
#     libgcc) and for functions added after 2.17: interpose/glibc_floor.cc defines __wrap_<name>;
#   - libstdc++ and libgcc linked statically, none of their symbols exported (a traced program
#     may bring another libstdc++; an older system has an older one: GLIBCXX_3.4.19 on CentOS 7);
#   - libpthread.so.0 and libdl.so.2 NEEDED: before glibc 2.34 the old versions live there (on
#     2.34+ they are empty stubs).
# SOURCES_ONLY: the header alone, for an object library whose objects a floored library links.
# HOOKS_PTHREAD_CREATE: the target defines pthread_create (the preload library's hook): its own
# calls must reach that definition, so pthread_create is neither bound nor wrapped there.
# Only on x86_64 (the versions named are x86_64's) and not in sanitizer builds (they need the
# build system's libasan/libtsan anyway); elsewhere the target keeps the build system's glibc as
# its floor. tests/portability checks the version needs of what this builds.
set(IDLESCOPE_GLIBC_FLOOR_WRAPPED
    # the static libstdc++ and libgcc: same code under the old version
    pthread_once pthread_key_create __pthread_key_create pthread_key_delete pthread_getspecific
    pthread_setspecific pthread_join pthread_detach
    # the static libstdc++ and libgcc: added after 2.17
    __libc_single_threaded arc4random getentropy _dl_find_object __cxa_thread_atexit_impl
    # added after 2.17 and called by our sources (or the static libstdc++)
    stat lstat fstat fstatat stat64 lstat64 fstat64 fstatat64 pthread_cond_clockwait
    __x86_get_cpuid_feature_leaf)

function(idlescope_glibc_floor target)
  cmake_parse_arguments(PARSE_ARGV 1 floor "SOURCES_ONLY;HOOKS_PTHREAD_CREATE" "" "")
  if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" OR IDLESCOPE_SANITIZE)
    return()
  endif()
  target_compile_options(${target} PRIVATE -include ${PROJECT_SOURCE_DIR}/interpose/glibc_floor.h)
  set(wrapped ${IDLESCOPE_GLIBC_FLOOR_WRAPPED})
  if(floor_HOOKS_PTHREAD_CREATE)
    target_compile_definitions(${target} PRIVATE IDLESCOPE_GLIBC_FLOOR_HOOKS_PTHREAD_CREATE=1)
  else()
    list(APPEND wrapped pthread_create)
  endif()
  if(floor_SOURCES_ONLY)
    return()
  endif()
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/interpose/glibc_floor.cc)
  list(TRANSFORM wrapped PREPEND "LINKER:--wrap=" OUTPUT_VARIABLE wraps)
  target_link_options(${target} PRIVATE ${wraps} -static-libstdc++ -static-libgcc
                      LINKER:--exclude-libs,ALL)
  target_link_libraries(${target} PRIVATE -Wl,--push-state,--no-as-needed -l:libpthread.so.0
                        -l:libdl.so.2 -Wl,--pop-state)
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS
               ${PROJECT_SOURCE_DIR}/interpose/glibc_floor.h)
endfunction()
