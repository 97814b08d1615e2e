#pragma once
// NumPy .npy files (format version 1.0) of float64 matrices: what the
// drivers write the trained models as (model_<algorithm>.npy, one row per
// run), for numpy.load and for deploying the model. Host code.

#include <cstddef>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "fedrt/core/status.h"

namespace fedrt::report {

// The header of a little-endian float64, C-order (rows, cols) array: the
// magic "\x93NUMPY", version 1.0, the header length (little-endian u16) and
// the dict, padded with spaces and a newline to a multiple of 64 bytes.
std::string NpyHeader(size_t rows, size_t cols);
// Writes `rows` (each of length `cols`) as a (rows.size(), cols) array of
// '<f8' in C order; a row of another length is an error naming it.
Status WriteNpy(const std::string& path, const std::vector<Eigen::VectorXd>& rows, size_t cols);

}  // namespace fedrt::report
