// The arguments of dmlps.Worker and dmlps.Evaluator, one row each
// (options.cc): their Python signature (what inspect.signature and help()
// show), their docstrings' "Parameters" section, and the library config
// they fill are all made from those rows. A field of WorkerConfig becomes a
// keyword of dmlps.Worker by one row there, and a line in _dmlps.pyi
// (tests/python/test_api.py holds the two to each other).
#ifndef DMLPS_PYTHON_OPTIONS_H_
#define DMLPS_PYTHON_OPTIONS_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "dmlps/worker/evaluator_client.h"
#include "dmlps/worker/worker.h"

namespace dmlps::python {

// What a class's rows make. REQUIRES: the GIL for every function here.
struct ClassArguments {
  pybind11::object signature;  // an inspect.Signature, without self
  std::string doc;             // the class's docstring
};

ClassArguments WorkerArguments();
ClassArguments EvaluatorArguments();

// `text` with each of its paragraphs (parted by blank lines) filled to 76
// columns, as a docstring reads best in help().
std::string Wrap(const std::string& text);

// The arguments of a call of `class_name` bound to `signature`, defaults
// filled in, by name. TypeError, naming the class, for an unknown keyword
// (with the nearest known one), a missing or a doubled argument.
pybind11::dict BindArguments(const char* class_name, const pybind11::object& signature,
                             const pybind11::args& args, const pybind11::kwargs& kwargs);

// The config that bound arguments (BindArguments) describe: every row's
// field set from its argument. TypeError for an argument of the wrong type,
// dmlps.InvalidArgumentError for a value no config takes (a malformed
// schedule); the config's own checks (ValidateConfig) are the caller's.
worker::WorkerConfig MakeWorkerConfig(const pybind11::dict& bound);
worker::EvaluatorConfig MakeEvaluatorConfig(const pybind11::dict& bound);

// The bound argument `name` of `class_name` that no config holds, checked:
// an int; a callable, or None unless `required`. TypeError otherwise.
int64_t IntegerArgument(const char* class_name, const pybind11::dict& bound, const char* name);
pybind11::object CallableArgument(const char* class_name, const pybind11::dict& bound,
                                  const char* name, bool required);

}  // namespace dmlps::python

#endif  // DMLPS_PYTHON_OPTIONS_H_
