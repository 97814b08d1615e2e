# mpirun -np K fedrt-sim (docs/architecture.md, "MPI"), label mpi: the same
# metrics.csv for K = 1, 2, 4 ranks (oversubscribed) as the single-process
# run, and a launch whose ranks read different experiments fails on every
# rank. The scripts exit 77 (skipped, with the reason) when fedrt-sim was
# built without MPI or mpirun is missing. Not in sanitizer builds, which have
# no MPI (CMakeLists.txt).
if(NOT FEDRT_MPI)
  # Without MPI, a process that an MPI launcher started (its environment says
  # so) refuses to run as one rank of K, and says why.
  add_test(NAME mpi_sim_refused_without_mpi
    COMMAND fedrt-sim --config ${CMAKE_CURRENT_LIST_DIR}/garnet.toml --out ${CMAKE_CURRENT_BINARY_DIR}/mpi_refused)
  set_tests_properties(mpi_sim_refused_without_mpi PROPERTIES LABELS mpi
    ENVIRONMENT "OMPI_COMM_WORLD_SIZE=2;OMPI_COMM_WORLD_RANK=0"
    PASS_REGULAR_EXPRESSION "started by an MPI launcher, but this build of fedrt-sim has no MPI")
endif()
if(FEDRT_SANITIZE)
  return()
endif()
set(_fedrt_mpi ${CMAKE_CURRENT_LIST_DIR})

# fedrt_mpi_test(NAME "K..." FEDRT_SIM_ARGS...)
function(fedrt_mpi_test name ranks)
  add_test(NAME mpi_sim_${name}
    COMMAND ${_fedrt_mpi}/same_metrics.sh $<TARGET_FILE:fedrt-sim> ${CMAKE_CURRENT_BINARY_DIR}/mpi_${name} "${ranks}"
            --threads 1 ${ARGN})
  set_tests_properties(mpi_sim_${name} PROPERTIES LABELS mpi SKIP_RETURN_CODE 77 TIMEOUT 300 PROCESSORS 2)
endfunction()

fedrt_mpi_test(garnet "1 2 4" --config ${_fedrt_mpi}/garnet.toml)
fedrt_mpi_test(garnet_partial "1 2 4" --config ${_fedrt_mpi}/garnet.toml --participation 0.5)
fedrt_mpi_test(garnet_secagg "1 2 4" --config ${_fedrt_mpi}/garnet-secagg.toml)
fedrt_mpi_test(garnet_empty_rank "4" --config ${_fedrt_mpi}/garnet.toml --agents 3)  # rank 3 owns no agent
fedrt_mpi_test(logistic "1 2 4" --config ${_fedrt_mpi}/logistic.toml)
fedrt_mpi_test(logistic_partial "1 2 4" --config ${_fedrt_mpi}/logistic.toml --participation 0.5)
fedrt_mpi_test(gmm "1 2 4" --config ${_fedrt_mpi}/gmm.toml)
# DIANA memories on the uplink, the compressed downlink's deltas, partial participation.
fedrt_mpi_test(logistic_compressed "3" --config ${_fedrt_mpi}/logistic.toml --quantizer dither --levels 16
  --compress-cv --compress-downlink --participation 0.7)

add_test(NAME mpi_sim_bad_input
  COMMAND ${_fedrt_mpi}/bad_input.sh $<TARGET_FILE:fedrt-sim> ${CMAKE_CURRENT_BINARY_DIR}/mpi_bad_input
          ${_fedrt_mpi}/garnet.toml)
set_tests_properties(mpi_sim_bad_input PROPERTIES LABELS mpi SKIP_RETURN_CODE 77 TIMEOUT 60 PROCESSORS 2)
