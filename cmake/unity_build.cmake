# Unity builds (docs/testing.md, "Build time"): each target's sources are
# compiled in batches of FEDRT_UNITY_BATCH files, one translation unit per
# batch. Most of a translation unit's time here is the same headers (Eigen,
# fmt, spdlog, CLI11, GoogleTest, Asio, protobuf) parsed and their templates
# instantiated and optimised again; a batch does that once.
#
# Sources must therefore not collide when concatenated: no two files of one
# target may define the same name in an anonymous namespace or as a static
# function. Third-party C (mbedTLS) is built file by file
# (fedrt_no_unity_build); so is the firmware (Generic), whose images and
# footprint budget are measured per object.
option(FEDRT_UNITY_BUILD "Compile each target's sources in unity batches" ON)
set(FEDRT_UNITY_BATCH 8 CACHE STRING "Source files per unity batch")
if(FEDRT_UNITY_BUILD AND NOT CMAKE_SYSTEM_NAME STREQUAL "Generic")
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${FEDRT_UNITY_BATCH})
endif()

# Targets whose sources are not written to be concatenated (third-party C).
function(fedrt_no_unity_build)
  set_target_properties(${ARGN} PROPERTIES UNITY_BUILD OFF)
endfunction()
