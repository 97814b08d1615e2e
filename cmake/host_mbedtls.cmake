# mbedTLS for the host (coordinator, Linux device, tools, and the aarch64 and
# armhf builds of the Linux device), compiled from Debian's mbedtls 3.6 LTS
# source package (scripts/fetch_sources.sh, from trixie) with
# runtime/tls/mbedtls_host_config.h: TLS 1.3 and 1.2, Debian's build options
# plus variable record buffers (docs/scale.md, "Memory per connection"). The
# one TLS library of the host: there is no fallback to a system copy. (The
# Cortex-M firmware builds the same source with its own configuration,
# cmake/firmware_app.cmake.)
#
# Sets FEDRT_MBEDTLS, FEDRT_MBEDX509, FEDRT_MBEDCRYPTO, FEDRT_SECAGG_MBEDCRYPTO
# and FEDRT_SECAGG_MBEDTLS_INCLUDE (read by network.cmake and secagg.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/third_party.cmake)
if(NOT FEDRT_MBEDTLS_SRC)
  message(FATAL_ERROR "host mbedTLS: no mbedtls-3.* source tree in ${FEDRT_THIRD_PARTY_DIR}: "
                      "run scripts/fetch_sources.sh (./fedrt build does)")
endif()
set(_src "${FEDRT_MBEDTLS_SRC}")
file(GLOB _fedrt_host_mbedtls_sources "${_src}/library/*.c")
add_library(fedrt_host_mbedtls STATIC ${_fedrt_host_mbedtls_sources})
fedrt_no_unity_build(fedrt_host_mbedtls)  # third-party C, file by file
target_include_directories(fedrt_host_mbedtls SYSTEM PUBLIC "${_src}/include" "${CMAKE_SOURCE_DIR}/runtime/tls")
target_include_directories(fedrt_host_mbedtls PRIVATE "${_src}/library")
target_compile_definitions(fedrt_host_mbedtls PUBLIC MBEDTLS_USER_CONFIG_FILE="mbedtls_host_config.h")
target_compile_options(fedrt_host_mbedtls PRIVATE -w)
if(FEDRT_FUZZ)
  # The fuzz targets test fedrt's decoders, not mbedTLS: its hashing, AEAD and
  # X25519 compiled without coverage and sanitizers, optimised, left the
  # secagg target's executions per second N times higher (docs/fuzzing.md).
  target_compile_options(fedrt_host_mbedtls PRIVATE -fno-sanitize=all -O2)
endif()
find_package(Threads REQUIRED)
target_link_libraries(fedrt_host_mbedtls PUBLIC Threads::Threads)
set(FEDRT_MBEDTLS fedrt_host_mbedtls)
set(FEDRT_MBEDX509 fedrt_host_mbedtls)
set(FEDRT_MBEDCRYPTO fedrt_host_mbedtls)
set(FEDRT_SECAGG_MBEDCRYPTO fedrt_host_mbedtls)
set(FEDRT_SECAGG_MBEDTLS_INCLUDE "${_src}/include")
message(STATUS "host mbedTLS: ${_src} (runtime/tls/mbedtls_host_config.h)")
