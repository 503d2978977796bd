// The exceptions of the dmlps module: one type per library StatusCode under
// dmlps.Error, with the built-in exception a Python caller would catch for
// that failure as a second base (docs/your-model.md, "Errors").
#ifndef DMLPS_PYTHON_ERRORS_H_
#define DMLPS_PYTHON_ERRORS_H_

#include <pybind11/pybind11.h>

#include <string>

#include "dmlps/base/status.h"

namespace dmlps::python {

// Creates dmlps.Error and its subclasses as attributes of `module`. Call
// once, before anything raises them.
void AddErrors(pybind11::module_& module);

// Raises the exception of `status` (not ok): the message is the status's,
// the one line the binaries print after "error: ". A kUnavailable status
// is UnavailableError before the server welcomed this peer and
// ServerLostError after (`welcomed`). REQUIRES: the GIL.
[[noreturn]] void RaiseStatus(const Status& status, bool welcomed = false);

// RaiseStatus of an InvalidArgument status: a bad argument from the caller.
[[noreturn]] void RaiseInvalid(const std::string& message);

}  // namespace dmlps::python

#endif  // DMLPS_PYTHON_ERRORS_H_
