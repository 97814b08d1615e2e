# Where scripts/fetch_sources.sh unpacked Debian's mbedtls and nanopb source
# packages, found once for the host's and the firmware's mbedTLS 3.6
# (cmake/host_mbedtls.cmake, cmake/firmware_app.cmake). Sets
# FEDRT_MBEDTLS_SRC (3.x, one tree for host and firmware),
# FEDRT_NANOPB_SRC and FEDRT_SODIUM_SRC (libsodium, the firmware's X25519) to
# the newest unpacked tree of each, or to "" when absent.
include_guard(GLOBAL)
set(FEDRT_THIRD_PARTY_DIR "${CMAKE_SOURCE_DIR}/build/third_party" CACHE PATH
    "where scripts/fetch_sources.sh unpacked the nanopb and mbedtls source packages")
file(GLOB _fedrt_mbedtls_dirs LIST_DIRECTORIES true "${FEDRT_THIRD_PARTY_DIR}/mbedtls-3.*")
file(GLOB _fedrt_nanopb_dirs LIST_DIRECTORIES true "${FEDRT_THIRD_PARTY_DIR}/nanopb-0.4.*")
file(GLOB _fedrt_sodium_dirs LIST_DIRECTORIES true "${FEDRT_THIRD_PARTY_DIR}/libsodium-1.0.*")
set(FEDRT_MBEDTLS_SRC "")
set(FEDRT_NANOPB_SRC "")
set(FEDRT_SODIUM_SRC "")
if(_fedrt_mbedtls_dirs)
  list(SORT _fedrt_mbedtls_dirs COMPARE NATURAL)
  list(GET _fedrt_mbedtls_dirs -1 FEDRT_MBEDTLS_SRC)
endif()
if(_fedrt_nanopb_dirs)
  list(GET _fedrt_nanopb_dirs -1 FEDRT_NANOPB_SRC)
endif()
if(_fedrt_sodium_dirs)
  list(GET _fedrt_sodium_dirs -1 FEDRT_SODIUM_SRC)
endif()
