// fedrt._fedrt: the compiled half of the Python package (runtime/python/fedrt
// holds the Python half and the documented API, docs/python.md).

#include <pybind11/pybind11.h>

#include "bindings.h"

namespace fedrt::python {

void Raise(const Status& status) {
  const std::string message = status.message();
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kFailedPrecondition:
      throw py::value_error(message);
    case StatusCode::kNotFound:
      PyErr_SetString(PyExc_FileNotFoundError, message.c_str());
      throw py::error_already_set();
    case StatusCode::kResourceExhausted:
      throw std::bad_alloc();
    default:
      throw std::runtime_error(message);
  }
}

}  // namespace fedrt::python

PYBIND11_MODULE(_fedrt, m) {
  m.doc() = "fedrt's simulator (compiled part); use the fedrt package's functions";
  fedrt::python::BindExperiment(m);
  fedrt::python::BindRun(m);
  fedrt::python::BindProblems(m);
  fedrt::python::BindPrivacy(m);
}
