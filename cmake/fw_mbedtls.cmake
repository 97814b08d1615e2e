# mbedTLS 3.6 for a firmware TLS 1.3 client whose X25519 is libsodium's ref10
# ladder (fedrt_fw_x25519, cmake/firmware_app.cmake): PSA crypto with every
# X25519 operation in the transparent driver of runtime/fw/psa_driver, so no
# bignum, ECP or ECDH module is built (a "driver-only" ECC build). PSA's
# driver dispatch (psa_crypto_driver_wrappers.h) is generated from the
# drivers' JSON descriptions by mbedTLS's own generator (its
# generate_driver_wrappers.py, Jinja2) into a copy of the library sources:
# the header sits next to psa_crypto.c, which includes it from its own
# directory. The generator takes import_key and export_public_key from a
# description but not generate_key or key_agreement: the calls to those two
# entry points are inserted here, before the built-in fallbacks, and the
# configure step fails if the generated text no longer has those places.
#
# fedrt_fw_mbedtls_library(TARGET CONFIG_FILE [INCLUDE_DIRS...]): a static
# library built with MBEDTLS_CONFIG_FILE=CONFIG_FILE (which must define
# MBEDTLS_PSA_CRYPTO_DRIVERS, FEDRT_PSA_X25519_DRIVER_ENABLED and the
# MBEDTLS_PSA_ACCEL_* macros of X25519, as runtime/fw/fw_mbedtls_config.h does).
include_guard(GLOBAL)
# python3 by path: a find_package(Python3) here, before cmake/python.cmake asks for
# the development module too, would leave pybind11 without it.
find_program(FEDRT_PYTHON3 python3 REQUIRED)

set(_fedrt_fwtls_root "${CMAKE_BINARY_DIR}/mbedtls-x25519-driver")
set(_fedrt_fwtls_lib "${_fedrt_fwtls_root}/library")
set(_fedrt_fwtls_jsons "${_fedrt_fwtls_root}/driver_jsons")
set(_fedrt_fwtls_json "${CMAKE_SOURCE_DIR}/runtime/fw/psa_driver/fedrt_x25519_driver.json")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_fedrt_fwtls_json}")
file(GLOB _fedrt_fwtls_orig "${FEDRT_MBEDTLS_SRC}/library/*.c" "${FEDRT_MBEDTLS_SRC}/library/*.h")
# The two files the generator writes (below, with our driver) are not copied
# from the release's own; psa_crypto_driver_wrappers_no_static.h is.
list(FILTER _fedrt_fwtls_orig EXCLUDE REGEX "/psa_crypto_driver_wrappers(\\.h|_no_static\\.c)$")
file(COPY ${_fedrt_fwtls_orig} DESTINATION "${_fedrt_fwtls_lib}")
file(COPY "${FEDRT_MBEDTLS_SRC}/scripts/data_files/driver_jsons/" DESTINATION "${_fedrt_fwtls_jsons}")
file(COPY "${_fedrt_fwtls_json}" DESTINATION "${_fedrt_fwtls_jsons}")
file(WRITE "${_fedrt_fwtls_jsons}/driverlist.json" "[\"p256_transparent_driver.json\",\"fedrt_x25519_driver.json\"]\n")
# Generated into a directory of its own and copied next to psa_crypto.c only
# when the text changed, so that a reconfigure rebuilds nothing.
set(_fedrt_fwtls_gen "${_fedrt_fwtls_root}/generated")
file(MAKE_DIRECTORY "${_fedrt_fwtls_gen}")
execute_process(
  COMMAND "${FEDRT_PYTHON3}" "${FEDRT_MBEDTLS_SRC}/scripts/generate_driver_wrappers.py"
          --project-root "${FEDRT_MBEDTLS_SRC}" --json-dir "${_fedrt_fwtls_jsons}" "${_fedrt_fwtls_gen}"
  RESULT_VARIABLE _fedrt_fwtls_rc OUTPUT_VARIABLE _fedrt_fwtls_out ERROR_VARIABLE _fedrt_fwtls_out)
if(NOT _fedrt_fwtls_rc EQUAL 0)
  message(FATAL_ERROR "generate_driver_wrappers.py (mbedTLS, python3-jinja2) failed: ${_fedrt_fwtls_out}")
endif()

# _fedrt_fwtls_insert(TEXT ANCHOR CALL): CALL goes right before ANCHOR, which must occur once.
function(_fedrt_fwtls_insert var anchor call)
  string(FIND "${${var}}" "${anchor}" _at)
  string(FIND "${${var}}" "${anchor}" _last REVERSE)
  if(_at EQUAL -1 OR NOT _at EQUAL _last)
    message(FATAL_ERROR "cmake/fw_mbedtls.cmake: the generated psa_crypto_driver_wrappers.h has no single "
                        "'${anchor}' to put the X25519 driver's call before (another mbedTLS version?)")
  endif()
  string(REPLACE "${anchor}" "${call}${anchor}" _text "${${var}}")
  set(${var} "${_text}" PARENT_SCOPE)
endfunction()
file(READ "${_fedrt_fwtls_gen}/psa_crypto_driver_wrappers.h" _fedrt_fwtls_wrappers)
_fedrt_fwtls_insert(_fedrt_fwtls_wrappers
  "            /* Software fallback */\n            status = psa_generate_key_internal("
  "#if defined(FEDRT_PSA_X25519_DRIVER_ENABLED)
            if( is_default_production )
            {
                status = fedrt_x25519_transparent_generate_key( attributes, key_buffer,
                                                                key_buffer_size, key_buffer_length );
                if( status != PSA_ERROR_NOT_SUPPORTED )
                    break;
            }
#endif /* FEDRT_PSA_X25519_DRIVER_ENABLED */
")
_fedrt_fwtls_insert(_fedrt_fwtls_wrappers
  "            /* Software Fallback */\n            status = psa_key_agreement_raw_builtin("
  "#if defined(FEDRT_PSA_X25519_DRIVER_ENABLED)
            status = fedrt_x25519_transparent_key_agreement( attributes, key_buffer, key_buffer_size, alg,
                                                             peer_key, peer_key_length, shared_secret,
                                                             shared_secret_size, shared_secret_length );
            if( status != PSA_ERROR_NOT_SUPPORTED )
                return( status );
#endif /* FEDRT_PSA_X25519_DRIVER_ENABLED */
")
file(WRITE "${_fedrt_fwtls_gen}/psa_crypto_driver_wrappers.h" "${_fedrt_fwtls_wrappers}")
file(GLOB _fedrt_fwtls_generated "${_fedrt_fwtls_gen}/*")
foreach(_f IN LISTS _fedrt_fwtls_generated)
  get_filename_component(_name "${_f}" NAME)
  file(COPY_FILE "${_f}" "${_fedrt_fwtls_lib}/${_name}" ONLY_IF_DIFFERENT)
endforeach()

function(fedrt_fw_mbedtls_library target config)
  file(GLOB _sources "${_fedrt_fwtls_lib}/*.c")
  add_library(${target} STATIC ${_sources} "${CMAKE_SOURCE_DIR}/runtime/fw/psa_driver/fedrt_psa_x25519_driver.c")
  fedrt_no_unity_build(${target})  # third-party C, file by file
  target_include_directories(${target} SYSTEM PUBLIC "${FEDRT_MBEDTLS_SRC}/include" "${CMAKE_SOURCE_DIR}/runtime/fw"
                             "${CMAKE_SOURCE_DIR}/runtime/fw/psa_driver" ${ARGN})
  target_include_directories(${target} PRIVATE "${_fedrt_fwtls_lib}")
  target_compile_definitions(${target} PUBLIC MBEDTLS_CONFIG_FILE="${config}")
  target_compile_options(${target} PRIVATE -w)
  target_link_libraries(${target} PUBLIC fedrt_fw_x25519)
endfunction()
