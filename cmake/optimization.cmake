# Federated optimisation family (issue 3): least squares / logistic problems,
# FedAvg, Scaffold, FedProx, Fed-RR, their theory and the simulator driver.
target_sources(fedrt_host PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/src/problems/fed_data.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/src/analysis/fedopt_theory.cc
)
