# Compiler cache for every preset (docs/testing.md, "Build time"): ccache from
# Debian, its cache in the user's cache directory (~/.cache/ccache), shared by
# every clone on the machine.
#
# - CCACHE_BASEDIR = the source tree: ccache rewrites absolute paths under it
#   to relative ones before hashing, so two clones in different folders hit
#   the same entries.
# - -ffile-prefix-map=<source>/= : no absolute path of the clone in objects
#   (__FILE__, debug info's directories), so an object from another clone's
#   cache entry is byte for byte the one this clone would compile. ccache
#   applies the same map to the working directory it hashes for -g builds.
# - Nothing sloppy: ccache's default (exact) matching, so a hit gives the
#   object the compiler would have produced.
#
# FEDRT_CCACHE=OFF (or no ccache installed) builds without it.
option(FEDRT_CCACHE "Compile through ccache when it is installed" ON)
find_program(FEDRT_CCACHE_PROGRAM ccache)
if(FEDRT_CCACHE AND FEDRT_CCACHE_PROGRAM)
  set(_fedrt_launcher /usr/bin/env "CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}" "${FEDRT_CCACHE_PROGRAM}")
  set(CMAKE_C_COMPILER_LAUNCHER ${_fedrt_launcher})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_fedrt_launcher})
  unset(_fedrt_launcher)
endif()
# Reproducible objects with or without the cache: paths relative to the clone.
add_compile_options("-ffile-prefix-map=${CMAKE_SOURCE_DIR}/=")
