# Federated optimisation family: least squares / logistic problems,
# FedAvg, Scaffold, FedProx, Fed-RR, their theory and the simulator driver.
# (Their sources are in the problems and report modules, CMakeLists.txt.)
