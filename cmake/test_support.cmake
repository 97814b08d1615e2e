if(FEDRT_DEVICE_ONLY)  # the ARM boards build no host harness
  return()
endif()
# Test support (tests/support): in-process SecAgg+ rounds with dropouts,
# cheats and a lying server, and the coordinator's fault hooks. The tests and
# the benchmarks link it; no product binary does.
add_library(fedrt_test_support STATIC tests/support/secagg_round.cc)
target_include_directories(fedrt_test_support PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/tests/support)
target_link_libraries(fedrt_test_support PUBLIC fedrt_secagg)
if(TARGET fedrt_coordinator)
  add_library(fedrt_test_faults STATIC tests/support/fault_hooks.cc)
  target_include_directories(fedrt_test_faults PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/tests/support)
  target_link_libraries(fedrt_test_faults PUBLIC fedrt_coordinator)
endif()
