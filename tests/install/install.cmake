# `cmake --install` into a scratch prefix, the installed programs and an
# out-of-tree project on find_package(fedrt) (run_install.sh; docs/install.md).
# The Debian packages are checked after the cross presets (scripts/test.sh,
# tests/install/run_debs.sh), as they need the aarch64 and armhf builds.
if(TARGET fedrt_device_archive)
  add_test(NAME install_prefix_consumer
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/run_install.sh --build ${CMAKE_BINARY_DIR}
                   --out ${CMAKE_BINARY_DIR}/install-test)
  set_tests_properties(install_prefix_consumer PROPERTIES LABELS "integration;quick" TIMEOUT 300)
endif()
