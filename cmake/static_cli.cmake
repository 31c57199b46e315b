# The CLI, bin/idlescope, linked statically: glibc, libstdc++, libgcc, protobuf and abseil. It
# then runs on any x86_64 Linux (kernel 3.2, glibc's own floor for static programs), whatever
# the glibc and libstdc++ there: a protobuf or abseil built on this machine would ask for this
# machine's glibc (2.34+) and libstdc++ (GLIBCXX_3.4.30), which Ubuntu 20.04, RHEL 8 or CentOS 7
# lack (README.md, "Supported systems"). The CLI uses nothing of glibc that a static program
# cannot (no NSS lookup, no dlopen, no iconv).
#
# Every other target keeps the shared protobuf and abseil. The link items below choose per
# consuming target: ${IDLESCOPE_PROTOBUF} and ${IDLESCOPE_ABSEIL} name the shared libraries,
# except in a target whose property IDLESCOPE_STATIC_LINK is set, which gets the static archives
# (pkg-config --static: the archives of the same components and theirs). Through the analyzer's
# static libraries too: $<TARGET_PROPERTY:prop> in a link interface is the final target's.
#
# Off in sanitizer builds (the sanitizer runtimes are shared libraries).
if(IDLESCOPE_SANITIZE)
  set(IDLESCOPE_STATIC_CLI_DEFAULT OFF)
else()
  set(IDLESCOPE_STATIC_CLI_DEFAULT ON)
endif()
option(IDLESCOPE_STATIC_CLI "Link bin/idlescope statically" ${IDLESCOPE_STATIC_CLI_DEFAULT})

# The abseil components the analyzer uses (absl::<name>, pkg-config absl_<name>).
set(IDLESCOPE_ABSEIL_COMPONENTS status statusor strings str_format flat_hash_map flat_hash_set
                                hash)

set(static_link "$<BOOL:$<TARGET_PROPERTY:IDLESCOPE_STATIC_LINK>>")
set(IDLESCOPE_PROTOBUF "$<$<NOT:${static_link}>:protobuf::libprotobuf>")
set(IDLESCOPE_ABSEIL)
foreach(component IN LISTS IDLESCOPE_ABSEIL_COMPONENTS)
  list(APPEND IDLESCOPE_ABSEIL "$<$<NOT:${static_link}>:absl::${component}>")
endforeach()

if(IDLESCOPE_STATIC_CLI)
  list(TRANSFORM IDLESCOPE_ABSEIL_COMPONENTS PREPEND "absl_" OUTPUT_VARIABLE modules)
  pkg_check_modules(IDLESCOPE_STATIC_DEPS REQUIRED ${modules} protobuf)
  add_library(idlescope_static_deps INTERFACE)
  # -static: every -l below resolves to its archive.
  target_link_libraries(idlescope_static_deps INTERFACE ${IDLESCOPE_STATIC_DEPS_STATIC_LDFLAGS})
  list(APPEND IDLESCOPE_PROTOBUF "$<${static_link}:idlescope_static_deps>")
  list(APPEND IDLESCOPE_ABSEIL "$<${static_link}:idlescope_static_deps>")
endif()
# libdw by name (-ldw -lelf): the shared libraries, or in the static CLI the archives and what
# they need in turn (pkg-config --static libdw: bzip2, zlib, xz). Only libdw's DWARF and ELF
# readers are used, not libdwfl, whose debuginfod client would dlopen (no dlopen in the CLI).
set(IDLESCOPE_LIBDW)
foreach(lib IN LISTS LIBDW_LIBRARIES)
  list(APPEND IDLESCOPE_LIBDW "$<$<NOT:${static_link}>:${lib}>")
endforeach()
foreach(lib IN LISTS LIBDW_STATIC_LIBRARIES)
  list(APPEND IDLESCOPE_LIBDW "$<${static_link}:${lib}>")
endforeach()
unset(static_link)

# idlescope_static_executable(<target>): links <target> statically (the CLI). Not -static-pie:
# these archives linked so leave an R_X86_64_NONE relocation that glibc's static-pie start
# asserts on.
function(idlescope_static_executable target)
  if(NOT IDLESCOPE_STATIC_CLI)
    return()
  endif()
  set_target_properties(${target} PROPERTIES IDLESCOPE_STATIC_LINK ON)
  target_link_options(${target} PRIVATE -static)
endfunction()
