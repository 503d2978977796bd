#include "errors.h"

#include <Python.h>

#include <array>
#include <cstddef>

namespace dmlps::python {
namespace {

namespace py = pybind11;

enum class Kind : size_t {
  kError,
  kInvalidArgument,
  kConfig,
  kDataLoss,
  kNotFound,
  kInputOutput,
  kServer,
  kUnavailable,
  kServerLost,
  kRefused,
  kProtocol,
  kInternal,
  kCount,
};

// One exception type: its name in the module, its dmlps parent (kError for
// the direct subclasses; the base itself names itself), the built-in
// exception that is its second base (null: none) and the library's status
// code it is raised for (kOk: none of its own).
struct ErrorType {
  Kind kind;
  const char* name;
  Kind parent;
  PyObject* const* builtin;
  StatusCode code;
  const char* doc;
};

// Parents come before their children.
const std::array<ErrorType, static_cast<size_t>(Kind::kCount)> kErrorTypes = {{
    {Kind::kError, "Error", Kind::kError, &PyExc_Exception, StatusCode::kOk,
     "A failure the dmlps library reports. The message is the line dmlps' programs print "
     "after 'error:'; the subclass says which kind of failure it is."},
    {Kind::kInvalidArgument, "InvalidArgumentError", Kind::kError, &PyExc_ValueError,
     StatusCode::kInvalidArgument,
     "A bad argument: a value out of range, a malformed schedule, layout or data spelling "
     "(dmlps-worker exits 64)."},
    {Kind::kConfig, "ConfigError", Kind::kError, &PyExc_ValueError, StatusCode::kConfig,
     "Settings that contradict each other or the server's job: a computation of another size "
     "than the server's model, CURVE keys the server does not take (exit 78)."},
    {Kind::kDataLoss, "DataLossError", Kind::kError, &PyExc_ValueError, StatusCode::kDataLoss,
     "A file whose content is corrupt or not what it should be: a damaged checkpoint, a key or "
     "secret file of the wrong form (exit 65)."},
    {Kind::kNotFound, "NotFoundError", Kind::kError, &PyExc_FileNotFoundError,
     StatusCode::kNotFound, "A file or folder that is not there (exit 66)."},
    {Kind::kInputOutput, "InputOutputError", Kind::kError, &PyExc_OSError, StatusCode::kIOError,
     "Reading or writing failed: a checkpoint, initial model or trace that cannot be written "
     "(exit 74)."},
    {Kind::kServer, "ServerError", Kind::kError, &PyExc_ConnectionError, StatusCode::kOk,
     "The server was not reached, went away, refused this peer or spoke another protocol: "
     "UnavailableError, ServerLostError, RefusedError or ProtocolError."},
    {Kind::kUnavailable, "UnavailableError", Kind::kServer, &PyExc_TimeoutError,
     StatusCode::kUnavailable,
     "No server welcomed this peer: none answered within connect_timeout_ms, or the server "
     "stopped before this peer joined (exit 69)."},
    {Kind::kServerLost, "ServerLostError", Kind::kServer, nullptr, StatusCode::kUnavailable,
     "The server that welcomed this peer went silent and did not come back: within "
     "reconnect_timeout_ms for a worker, server_timeout_ms for an evaluator (exit 69)."},
    {Kind::kRefused, "RefusedError", Kind::kServer, nullptr, StatusCode::kRefused,
     "The server answered and refused this peer: a layout other than the external model's, a "
     "rank already taken, a missing or wrong job secret, an evaluator it does not want "
     "(exit 69)."},
    {Kind::kProtocol, "ProtocolError", Kind::kServer, nullptr, StatusCode::kProtocol,
     "The server spoke something other than this dmlps's protocol: another version, a "
     "malformed or impossible message (exit 76)."},
    {Kind::kInternal, "InternalError", Kind::kError, &PyExc_RuntimeError, StatusCode::kInternal,
     "An invariant did not hold: a bug of dmlps, or a callback's result that breaks one (an "
     "accuracy outside [0, 1]) (exit 70)."},
}};

// The types, made once by AddErrors and never freed: they live as long as
// the process, as a built-in exception does.
std::array<PyObject*, static_cast<size_t>(Kind::kCount)> g_types{};

PyObject* TypeOf(Kind kind) { return g_types[static_cast<size_t>(kind)]; }

// The first type raised for `code`; kUnavailable's second, ServerLostError,
// once the server welcomed this peer.
Kind KindOf(StatusCode code, bool welcomed) {
  if (code == StatusCode::kUnavailable && welcomed) return Kind::kServerLost;
  for (const ErrorType& type : kErrorTypes) {
    if (type.code == code && code != StatusCode::kOk) return type.kind;
  }
  return Kind::kError;
}

}  // namespace

void AddErrors(py::module_& module) {
  for (const ErrorType& type : kErrorTypes) {
    py::tuple bases;
    if (type.kind == Kind::kError) {
      bases = py::make_tuple(py::handle(*type.builtin));
    } else if (type.builtin == nullptr) {
      bases = py::make_tuple(py::handle(TypeOf(type.parent)));
    } else {
      bases = py::make_tuple(py::handle(TypeOf(type.parent)), py::handle(*type.builtin));
    }
    const std::string qualified = std::string("dmlps.") + type.name;
    PyObject* made =
        PyErr_NewExceptionWithDoc(qualified.c_str(), type.doc, bases.ptr(), /*dict=*/nullptr);
    if (made == nullptr) throw py::error_already_set();
    g_types[static_cast<size_t>(type.kind)] = made;
    module.attr(type.name) = py::handle(made);
  }
}

void RaiseStatus(const Status& status, bool welcomed) {
  PyErr_SetString(TypeOf(KindOf(status.code(), welcomed)), status.message().c_str());
  throw py::error_already_set();
}

void RaiseInvalid(const std::string& message) { RaiseStatus(Status::InvalidArgument(message)); }

}  // namespace dmlps::python
