# mbedTLS for the host (coordinator, Linux device, tools), compiled from
# Debian's mbedtls 2.28 source package (scripts/fetch_sources.sh, the same
# tree the firmware builds from) with runtime/tls/mbedtls_host_config.h:
# Debian's configuration plus MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH, which the
# binary package lacks and which cuts a coordinator's memory per session
# from about 36 KiB to under 12 (docs/scale.md). Without the source tree the
# build falls back to Debian's libmbedtls (fixed 16 KiB record buffers).
#
# Sets FEDRT_MBEDTLS, FEDRT_MBEDX509, FEDRT_MBEDCRYPTO, FEDRT_SECAGG_MBEDCRYPTO
# and FEDRT_SECAGG_MBEDTLS_INCLUDE (read by network.cmake and secagg.cmake).
include(${CMAKE_CURRENT_LIST_DIR}/third_party.cmake)
option(FEDRT_HOST_MBEDTLS_FROM_SOURCE "Build the host's mbedTLS from Debian's source package when fetched" ON)
set(FEDRT_HOST_MBEDTLS_VARIABLE_BUFFERS OFF)
if(FEDRT_HOST_MBEDTLS_FROM_SOURCE AND NOT CMAKE_CROSSCOMPILING)
  if(FEDRT_MBEDTLS_SRC)
    set(_src "${FEDRT_MBEDTLS_SRC}")
    file(GLOB _fedrt_host_mbedtls_sources "${_src}/library/*.c")
    add_library(fedrt_host_mbedtls STATIC ${_fedrt_host_mbedtls_sources})
    fedrt_no_unity_build(fedrt_host_mbedtls)  # third-party C, file by file
    target_include_directories(fedrt_host_mbedtls SYSTEM PUBLIC "${_src}/include"
                               "${CMAKE_SOURCE_DIR}/runtime/tls")
    target_include_directories(fedrt_host_mbedtls PRIVATE "${_src}/library")
    target_compile_definitions(fedrt_host_mbedtls PUBLIC MBEDTLS_USER_CONFIG_FILE="mbedtls_host_config.h"
                               FEDRT_HOST_MBEDTLS_VARIABLE_BUFFERS=1)
    target_compile_options(fedrt_host_mbedtls PRIVATE -w)
    find_package(Threads REQUIRED)
    target_link_libraries(fedrt_host_mbedtls PUBLIC Threads::Threads)
    set(FEDRT_MBEDTLS fedrt_host_mbedtls)
    set(FEDRT_MBEDX509 fedrt_host_mbedtls)
    set(FEDRT_MBEDCRYPTO fedrt_host_mbedtls)
    set(FEDRT_SECAGG_MBEDCRYPTO fedrt_host_mbedtls)
    set(FEDRT_SECAGG_MBEDTLS_INCLUDE "${_src}/include")
    set(FEDRT_HOST_MBEDTLS_VARIABLE_BUFFERS ON)
    message(STATUS "host mbedTLS: ${_src} with variable record buffers (runtime/tls/mbedtls_host_config.h)")
  else()
    message(STATUS "host mbedTLS: Debian's libmbedtls, fixed 16 KiB record buffers "
                   "(scripts/fetch_sources.sh fetches the source for 3x less memory per coordinator session)")
  endif()
endif()
