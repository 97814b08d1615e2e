# Tests of the federated optimisation family.
add_executable(fedrt_opt_tests unit/fedopt_test.cc unit/fedopt_compression_test.cc)
target_link_libraries(fedrt_opt_tests PRIVATE fedrt_host GTest::gtest_main)
gtest_discover_tests(fedrt_opt_tests PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)

add_executable(fedrt_opt_stat_tests unit/fedopt_stat_test.cc)
target_link_libraries(fedrt_opt_stat_tests PRIVATE fedrt_host GTest::gtest_main)
gtest_discover_tests(fedrt_opt_stat_tests PROPERTIES LABELS statistical DISCOVERY_TIMEOUT 60)

# fedrt-sim end to end on CSV data: bad files are rejected with exit code 2 and
# a message naming the file and line; a tiny good data directory runs.
set(FEDRT_OPT_DATA ${CMAKE_CURRENT_SOURCE_DIR}/data/fedopt)
function(fedrt_opt_sim_fails name regex)
  set(cmd $<TARGET_FILE:fedrt-sim> ${ARGN} --rounds 1 --local-steps 1 --no-plot
          --out ${CMAKE_CURRENT_BINARY_DIR}/out_${name})
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND} "-DCMD=${cmd}" "-DREGEX=${regex}" -DEXPECT_RC=2
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect_failure.cmake)
  set_tests_properties(${name} PROPERTIES LABELS cli TIMEOUT 60)
endfunction()
fedrt_opt_sim_fails(opt_csv_wrong_columns "bad_columns.csv:3: expected 4 columns \\(as on line 2\\), got 3"
                    --problem lsq --data ${FEDRT_OPT_DATA}/bad_columns.csv)
fedrt_opt_sim_fails(opt_csv_non_numeric "bad_cell.csv:3: column 3: 'zero' is not a number"
                    --problem lsq --data ${FEDRT_OPT_DATA}/bad_cell.csv)
fedrt_opt_sim_fails(opt_csv_agent_without_rows "gap_agent.csv: agent 1 has no rows"
                    --problem logistic --data ${FEDRT_OPT_DATA}/gap_agent.csv)
fedrt_opt_sim_fails(opt_csv_mismatched_dims "agent1.csv:2: 1 features, but .*agent0.csv has 2"
                    --problem lsq --data ${FEDRT_OPT_DATA}/mismatch)
fedrt_opt_sim_fails(opt_csv_missing "data path '.*no_such_dir' not found"
                    --problem lsq --data ${FEDRT_OPT_DATA}/no_such_dir)
fedrt_opt_sim_fails(opt_agents_mismatch "--agents 3 does not match the 2 agents"
                    --problem lsq --agents 3 --data ${FEDRT_OPT_DATA}/tiny)
fedrt_opt_sim_fails(opt_fedprox_exact_logistic "unknown algorithm 'fedprox-exact' for this problem"
                    --problem logistic --algorithm fedprox-exact)
fedrt_opt_sim_fails(opt_bad_batch "--batch must be >= 0" --problem lsq --batch -1)
fedrt_opt_sim_fails(opt_bad_prox_mu "--prox-mu must be a positive number, got 0" --problem lsq --prox-mu 0)
add_test(NAME opt_csv_tiny_runs
         COMMAND fedrt-sim --problem lsq --data ${FEDRT_OPT_DATA}/tiny --algorithm fedavg,scaffold,fedprox-exact
                 --rr --batch 1 --rounds 4 --local-steps 2 --no-plot --out ${CMAKE_CURRENT_BINARY_DIR}/out_opt_tiny)
set_tests_properties(opt_csv_tiny_runs PROPERTIES LABELS cli TIMEOUT 60)
# Compressed uplink/downlink for the optimisation family: runs end to
# end and summary.json carries the exact bits.
add_test(NAME opt_quantizer_dither_runs
         COMMAND fedrt-sim --problem lsq --quantizer dither --levels 4 --compress-cv --compress-downlink
                 --algorithm fedavg,scaffold,fedprox --rr --rounds 5 --local-steps 2 --no-plot
                 --out ${CMAKE_CURRENT_BINARY_DIR}/out_opt_dither)
set_tests_properties(opt_quantizer_dither_runs PROPERTIES LABELS cli TIMEOUT 60)
fedrt_opt_sim_fails(opt_compress_cv_without_quantizer "--compress-cv needs --quantizer dither or rounding"
                    --problem lsq --compress-cv)

# Device discipline of the optimisation cores (as device/no_heap_test.cc).
add_executable(fedopt_device_no_heap_test device/fedopt_no_heap_test.cc)
target_link_libraries(fedopt_device_no_heap_test PRIVATE fedrt_device_headers)
target_compile_options(fedopt_device_no_heap_test PRIVATE -fno-exceptions -fno-rtti -UNDEBUG)
if(NOT FEDRT_SANITIZE)  # it replaces malloc, which the sanitizers intercept
  add_test(NAME fedopt_device_no_heap COMMAND fedopt_device_no_heap_test)
  set_tests_properties(fedopt_device_no_heap PROPERTIES LABELS "device")
endif()
