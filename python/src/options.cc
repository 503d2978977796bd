#include "options.h"

#include <Python.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "errors.h"

namespace dmlps::python {
namespace {

namespace py = pybind11;

// Where an argument stands in the signature.
enum class Place {
  kRequired,  // positional or keyword, no default
  kOptional,  // positional or keyword, with a default
  kOption,    // keyword only, with its config field's default
};

// One argument of a class whose config is Config.
template <typename Config>
struct Row {
  const char* name;
  const char* type;  // as _dmlps.pyi spells it
  const char* help;
  Place place;
  // The default: the value in a default Config as Python sees it. Null for
  // a required argument.
  std::function<py::object(const Config&)> get;
  // Sets the field from the argument; TypeError or InvalidArgumentError
  // naming `what` (the class) when it cannot. Null: the binding reads the
  // argument itself (a callback, a sample count).
  std::function<void(const char* what, const py::handle&, Config*)> set;
};

std::string TypeName(const py::handle& value) {
  return py::str(py::type::handle_of(value).attr("__name__")).cast<std::string>();
}

[[noreturn]] void RaiseType(const char* what, const char* name, const char* wanted,
                            const py::handle& value) {
  throw py::type_error(std::string(what) + ": " + name + " must be " + wanted + ", not " +
                       TypeName(value));
}

// An integer in [lowest, highest]: anything operator.index takes (a NumPy
// integer too), not a float.
int64_t ToInteger(const char* what, const char* name, const py::handle& value, int64_t lowest) {
  PyObject* index = PyNumber_Index(value.ptr());
  if (index == nullptr) {
    PyErr_Clear();
    RaiseType(what, name, "an int", value);
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(index, &overflow);  // NOLINT(runtime/int)
  Py_DECREF(index);
  if (overflow != 0 || v < lowest) {
    RaiseInvalid(std::string(what) + ": " + name + " " + py::repr(value).cast<std::string>() +
                 " is out of range");
  }
  return static_cast<int64_t>(v);
}

// A real number: an int or anything float() takes but a string.
double ToReal(const char* what, const char* name, const py::handle& value) {
  if (PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr())) {
    RaiseType(what, name, "a number", value);
  }
  const double v = PyFloat_AsDouble(value.ptr());
  if (v == -1.0 && PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    RaiseType(what, name, "a number", value);
  }
  return v;
}

// A string, or None for the empty one; a file name also as os.PathLike.
std::string ToText(const char* what, const char* name, const py::handle& value, bool path) {
  if (value.is_none()) return "";
  if (PyUnicode_Check(value.ptr())) return value.cast<std::string>();
  if (path && py::hasattr(value, "__fspath__")) {
    py::object text = py::module_::import("os").attr("fspath")(value);
    if (PyUnicode_Check(text.ptr())) return text.cast<std::string>();
  }
  RaiseType(what, name, path ? "a str or os.PathLike" : "a str", value);
}

py::object FromText(const std::string& text) {
  return text.empty() ? py::object(py::none()) : py::object(py::str(text));
}

// A keyword option for a config field: `at(config)` is the field, for a
// const config too (a generic lambda returning auto&); `show(field)` is
// the default as Python sees it, `read(what, name, argument)` the field's
// value from an argument (raising as Row::set says).
template <typename Config, typename At, typename Show, typename Read>
Row<Config> Field(const char* name, const char* type, const char* help, At at, Show show,
                  Read read) {
  return {name,
          type,
          help,
          Place::kOption,
          [at, show](const Config& c) -> py::object { return show(at(c)); },
          [at, name, read](const char* what, const py::handle& v, Config* c) {
            at(*c) = read(what, name, v);
          }};
}

// The type of the field `at` names.
template <typename Config, typename At>
using FieldOf = std::remove_cvref_t<decltype(std::declval<At>()(std::declval<Config&>()))>;

template <typename Config, typename At>
Row<Config> Integer(const char* name, const char* help, At at) {
  using Type = FieldOf<Config, At>;
  return Field<Config>(
      name, "int", help, at, [](Type v) -> py::object { return py::int_(v); },
      [](const char* what, const char* arg, const py::handle& v) {
        return static_cast<Type>(ToInteger(what, arg, v, std::is_unsigned_v<Type> ? 0 : INT64_MIN));
      });
}

template <typename Config, typename At>
Row<Config> Real(const char* name, const char* help, At at) {
  return Field<Config>(
      name, "float", help, at, [](double v) -> py::object { return py::float_(v); }, ToReal);
}

// A duration field (milliseconds or finer) as whole milliseconds.
template <typename Config, typename At>
Row<Config> Millis(const char* name, const char* help, At at) {
  using Type = FieldOf<Config, At>;
  return Field<Config>(
      name, "int", help, at,
      [](Type v) -> py::object {
        return py::int_(std::chrono::duration_cast<std::chrono::milliseconds>(v).count());
      },
      [](const char* what, const char* arg, const py::handle& v) {
        const int64_t ms = ToInteger(what, arg, v, INT64_MIN);
        if (std::abs(ms) > int64_t{1} << 40) {
          RaiseInvalid(std::string(what) + ": " + arg + " " + std::to_string(ms) +
                       " is out of range");
        }
        return std::chrono::duration_cast<Type>(std::chrono::milliseconds(ms));
      });
}

// A string field, None for empty; `path`: a file's name (os.PathLike too).
template <typename Config, typename At>
Row<Config> Text(const char* name, const char* help, At at, bool path) {
  return Field<Config>(name, path ? "str | os.PathLike[str] | None" : "str | None", help, at,
                       FromText, [path](const char* what, const char* arg, const py::handle& v) {
                         return ToText(what, arg, v, path);
                       });
}

// A schedule field "ITER:VALUE,..." parsed by `parse`; None for none.
template <typename Config, typename At, typename Parse>
Row<Config> Schedule(const char* name, const char* help, At at, Parse parse) {
  using Type = FieldOf<Config, At>;
  return Field<Config>(
      name, "str | None", help, at,
      [](const Type& schedule) {
        std::string text;
        for (const auto& [iteration, value] : schedule) {
          text += (text.empty() ? "" : ",") + std::to_string(iteration) + ":" +
                  py::repr(py::float_(value)).cast<std::string>();
        }
        return FromText(text);
      },
      [parse](const char* what, const char* arg, const py::handle& v) {
        const std::string text = ToText(what, arg, v, false);
        if (text.empty()) return Type();
        auto parsed = parse(text);
        if (!parsed.ok()) {
          RaiseInvalid(std::string(what) + ": " + arg + ": " + parsed.status().message());
        }
        return Type(std::move(*parsed));
      });
}

// An argument the binding reads itself.
template <typename Config>
Row<Config> Argument(const char* name, const char* type, const char* help, Place place,
                     std::function<py::object()> default_value = nullptr) {
  Row<Config> row{name, type, help, place, nullptr, nullptr};
  if (default_value) row.get = [default_value](const Config&) { return default_value(); };
  return row;
}

py::object NoneDefault() { return py::none(); }

// The server's address: a field of both configs' link, and the first argument.
template <typename Config>
Row<Config> Server() {
  return {"server",
          "str",
          "The server's address, as dmlps-worker --server takes it: tcp://HOST:PORT or "
          "ipc://PATH.",
          Place::kRequired,
          nullptr,
          [](const char* what, const py::handle& v, Config* c) {
            c->link.server = ToText(what, "server", v, false);
          }};
}

// The options a worker and an evaluator share: how they reach the server.
template <typename Config>
void AddConnectionRows(std::vector<Row<Config>>* rows) {
  rows->push_back(Millis<Config>(
      "connect_timeout_ms",
      "Give up (dmlps.UnavailableError) when no server answers within this many milliseconds.",
      [](auto& c) -> auto& { return c.link.connect_timeout; }));
  rows->push_back(Millis<Config>(
      "server_timeout_ms",
      "Count the server as gone when it is silent this many milliseconds: a worker reconnects, "
      "an evaluator gives up (dmlps.ServerLostError).",
      [](auto& c) -> auto& { return c.link.server_timeout; }));
  rows->push_back(Millis<Config>(
      "heartbeat_ms", "Milliseconds between heartbeats to the server.",
      [](auto& c) -> auto& { return c.link.heartbeat; }));
  rows->push_back(Text<Config>(
      "curve_secret",
      "Encrypt and authenticate with CURVE: this peer's secret key file (from dmlps-keygen); "
      "goes with curve_server_key.",
      [](auto& c) -> auto& { return c.link.curve_secret; }, /*path=*/true));
  rows->push_back(Text<Config>(
      "curve_server_key", "The server's CURVE public key: 40 Z85 characters, or its .pub file.",
      [](auto& c) -> auto& { return c.link.curve_server_key; }, /*path=*/true));
  rows->push_back(Text<Config>(
      "secret",
      "The job secret file (dmlps-keygen --secret), which the server asks of its evaluator and "
      "of the worker announcing a layout. None: the file $DMLPS_SECRET_FILE names, if set.",
      [](auto& c) -> auto& { return c.link.secret_file; }, /*path=*/true));
}

// The arguments a worker reads itself, before its options.
std::vector<Row<worker::WorkerConfig>> WorkerLeadingRows() {
  using Config = worker::WorkerConfig;
  return {
      Server<Config>(),
      Argument<Config>("num_samples", "int",
                       "How many samples the caller holds: compute's sample_ids are indices in "
                       "[0, num_samples). on_join may set it instead (give 0 then).",
                       Place::kRequired),
      Argument<Config>(
          "compute",
          "Callable[[npt.NDArray[np.float32], npt.NDArray[np.int64], npt.NDArray[np.float32]], "
          "float]",
          "compute(params, sample_ids, grad): fills grad with the mean gradient over the "
          "samples and returns their mean loss (anything float() takes).",
          Place::kRequired),
      Argument<Config>("num_params", "int",
                       "The flat vector's length; -1: the server's model's, taken as given.",
                       Place::kOptional, [] { return py::int_(-1); }),
      Argument<Config>(
          "on_join", "Callable[[dict[str, Any]], int | None] | None",
          "on_join(job) gets the server's job as a dict (rank, num_workers, model, policy, "
          "batch, input_dim, classes, num_params, num_state, shard_index, shard_count) when the "
          "worker is welcomed (again when a rejoin moves it to another rank or shard), and may "
          "return the sample count (of the shard it then loads, say).",
          Place::kOptional, NoneDefault),
      Argument<Config>(
          "layout", "Sequence[tuple[str, Sequence[int]] | tuple[str, Sequence[int], bool]] | None",
          "The model's tensors in the flat vector's order: (name, shape) per parameter, then "
          "(name, shape, True) per tensor of module state. Announced to a server of --model "
          "external, which takes the first announcement of a worker presenting the job secret "
          "and refuses any other layout (dmlps.RefusedError).",
          Place::kOptional, NoneDefault),
      Argument<Config>("initial_values", "npt.ArrayLike | None",
                       "The model's initial values, a flat float32 array as long as layout: "
                       "what a server of --model external starts from when this worker's "
                       "announcement is the first.",
                       Place::kOptional, NoneDefault),
      Argument<Config>(
          "local_step",
          "Callable[[npt.NDArray[np.float32], npt.NDArray[np.float32]], object] | None",
          "local_step(params, grad) takes the local steps of wbsp, localsgd and async-localsgd, "
          "called right after compute: it moves params (writable, copied back into the "
          "worker's local model when it returns) as its own optimizer steps them. None: the "
          "server's --lr and --momentum SGD.",
          Place::kOptional, NoneDefault),
  };
}

// The straggler emulation's options (docs/algorithms-stragglers.md, "Emulating
// heterogeneity"), dmlps-worker's "Straggler emulation" flags.
void AddStragglerRows(std::vector<Row<worker::WorkerConfig>>* rows) {
  using Config = worker::WorkerConfig;
  rows->push_back(Real<Config>(
      "slowdown", "After a step whose compute took t, sleep (K-1)*t: K times slower.",
      [](auto& c) -> auto& { return c.straggler.slowdown; }));
  rows->push_back(Schedule<Config>(
      "slowdown_schedule", "Slowdown by iteration, e.g. '0:1,150:4' (4x from iteration 150 on).",
      [](auto& c) -> auto& { return c.straggler.schedule; }, worker::ParseSlowdownSchedule));
  rows->push_back(Millis<Config>(
      "delay_ms", "Sleep this many milliseconds after every step (with delay_prob: sometimes).",
      [](auto& c) -> auto& { return c.straggler.delay; }));
  rows->push_back(Real<Config>(
      "delay_prob", "Sleep delay_ms after a step only with this probability.",
      [](auto& c) -> auto& { return c.straggler.delay_prob; }));
  rows->push_back(Millis<Config>(
      "round_robin_ms", "In iteration t, the worker of rank t mod N sleeps this many milliseconds.",
      [](auto& c) -> auto& { return c.straggler.round_robin; }));
  rows->push_back(Real<Config>(
      "bandwidth_mbps", "Cap what this worker sends at this many megabits per second; 0: no cap.",
      [](auto& c) -> auto& { return c.straggler.bandwidth_mbps; }));
  rows->push_back(Schedule<Config>(
      "bandwidth_schedule",
      "Bandwidth cap by iteration, e.g. '0:0,150:100' (100 Mb/s from iteration 150 on; 0: no "
      "cap).",
      [](auto& c) -> auto& { return c.straggler.bandwidth_schedule; },
      worker::ParseBandwidthSchedule));
  rows->push_back(Integer<Config>(
      "seed", "Seeds delay_prob's draws, mixed with the run's seed and the rank.",
      [](auto& c) -> auto& { return c.straggler.seed; }));
}

// Every argument of dmlps.Worker, in the signature's order.
std::vector<Row<worker::WorkerConfig>> WorkerRows() {
  using Config = worker::WorkerConfig;
  std::vector<Row<Config>> rows = WorkerLeadingRows();
  rows.push_back(Integer<Config>(
      "rank", "Ask for this rank; -1: the server assigns one.",
      [](auto& c) -> auto& { return c.rank; }));
  AddConnectionRows(&rows);
  rows.push_back(Millis<Config>(
      "reconnect_timeout_ms",
      "Retry a server that went away for this many milliseconds, then give up "
      "(dmlps.ServerLostError).",
      [](auto& c) -> auto& { return c.reconnect_timeout; }));
  rows.push_back(Integer<Config>(
      "threads", "Threads for the worker's own arithmetic (Eigen); compute's are its own.",
      [](auto& c) -> auto& { return c.threads; }));
  rows.push_back(Integer<Config>(
      "max_batch", "The most samples this worker takes in one step (lbbsp respects it); 0: no cap.",
      [](auto& c) -> auto& { return c.max_batch; }));
  AddStragglerRows(&rows);
  rows.push_back(Text<Config>(
      "trace", "Write a trace of this worker's steps to this file ('-': standard output).",
      [](auto& c) -> auto& { return c.trace; }, /*path=*/true));
  return rows;
}

std::vector<Row<worker::EvaluatorConfig>> EvaluatorRows() {
  using Config = worker::EvaluatorConfig;
  std::vector<Row<Config>> rows = {
      Server<Config>(),
      Argument<Config>("evaluate", "Callable[[npt.NDArray[np.float32]], tuple[float, float]]",
                       "evaluate(params) scores a snapshot, a read-only float32 array of the "
                       "flat vector, and returns (accuracy, loss): accuracy in [0, 1], loss "
                       "finite and not negative.",
                       Place::kRequired),
      Argument<Config>("on_join", "Callable[[str, int], object] | None",
                       "on_join(model, num_params) is called once the server has welcomed the "
                       "evaluator, before any snapshot: the server's model (a built-in model's "
                       "spelling or 'external') and its length.",
                       Place::kOptional, NoneDefault),
  };
  AddConnectionRows(&rows);
  return rows;
}

const char kWorkerIntro[] =
    "A dmlps worker whose gradients a Python function computes: it joins a dmlps-server and "
    "trains as dmlps-worker does, under every policy.\n\n"
    "compute's params (float32, read-only), sample_ids (int64, read-only) and grad (float32, "
    "writable) are NumPy arrays of their own. params is a copy of the worker's model; grad is "
    "copied into the worker's push when compute returns. An array kept past its call stays "
    "valid, after run() too, and holds what it held when its call returned: the worker never "
    "writes into it again, and writing into it changes nothing the worker sends (a later call "
    "gets other arrays; an array nothing keeps is reused). A model with module state (layout "
    "entries (name, shape, True), last) reads the server's state at the end of params and "
    "writes its own at the end of grad.\n\n"
    "The options are dmlps-worker(1)'s flags, with its defaults; a duration is in "
    "milliseconds.";

const char kEvaluatorIntro[] =
    "Joins a dmlps-server started with --evaluator and scores the snapshots it would have "
    "scored itself; the server stamps the scores with the snapshots' times, so its TSV, "
    "--target-accuracy and traces behave as for a built-in model.\n\n"
    "A PyTorch module should be scored in eval() mode (Dropout off, BatchNorm on its running "
    "statistics): dmlps.torch.evaluator does so, and restores the module's modes afterwards. "
    "The server grants the role only to an evaluator presenting its job secret.";

const char kRaises[] =
    "Raises\n------\n"
    "TypeError\n    An unknown keyword, or an argument of the wrong type.\n"
    "dmlps.InvalidArgumentError\n    A value out of range, a malformed schedule or layout.\n"
    "run() raises the rest (see its docstring).";

template <typename Config>
ClassArguments Make(const std::vector<Row<Config>>& rows, const char* intro) {
  py::object inspect = py::module_::import("inspect");
  py::object parameter = inspect.attr("Parameter");
  py::object textwrap = py::module_::import("textwrap");
  const Config defaults;
  py::list parameters;
  std::string doc = Wrap(intro) + "\n\nParameters\n----------\n";
  for (const Row<Config>& row : rows) {
    py::object kind =
        parameter.attr(row.place == Place::kOption ? "KEYWORD_ONLY" : "POSITIONAL_OR_KEYWORD");
    py::object default_value = row.get ? row.get(defaults) : parameter.attr("empty");
    parameters.append(parameter(row.name, kind, py::arg("default") = default_value));
    doc += std::string(row.name) + " : " + row.type;
    if (row.get) doc += ", default " + py::repr(default_value).cast<std::string>();
    const py::object help = textwrap.attr("fill")(py::str(row.help), py::arg("width") = 76,
                                                  py::arg("initial_indent") = "    ",
                                                  py::arg("subsequent_indent") = "    ");
    doc += "\n" + help.cast<std::string>() + "\n";
  }
  doc += "\n";
  doc += kRaises;
  return {inspect.attr("Signature")(parameters), doc};
}

template <typename Config>
Config MakeConfig(const char* what, const std::vector<Row<Config>>& rows, const py::dict& bound) {
  Config config;
  for (const Row<Config>& row : rows) {
    if (row.set) row.set(what, bound[row.name], &config);
  }
  return config;
}

}  // namespace

std::string Wrap(const std::string& text) {
  py::object textwrap = py::module_::import("textwrap");
  std::string out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find("\n\n", begin);
    if (end == std::string::npos) end = text.size();
    const py::object filled =
        textwrap.attr("fill")(py::str(text.substr(begin, end - begin)), py::arg("width") = 76);
    out += (out.empty() ? "" : "\n\n") + filled.cast<std::string>();
    begin = end + 2;
  }
  return out;
}

ClassArguments WorkerArguments() { return Make(WorkerRows(), kWorkerIntro); }

ClassArguments EvaluatorArguments() { return Make(EvaluatorRows(), kEvaluatorIntro); }

worker::WorkerConfig MakeWorkerConfig(const py::dict& bound) {
  return MakeConfig("Worker", WorkerRows(), bound);
}

worker::EvaluatorConfig MakeEvaluatorConfig(const py::dict& bound) {
  return MakeConfig("Evaluator", EvaluatorRows(), bound);
}

int64_t IntegerArgument(const char* class_name, const py::dict& bound, const char* name) {
  return ToInteger(class_name, name, bound[name], INT64_MIN);
}

py::object CallableArgument(const char* class_name, const py::dict& bound, const char* name,
                            bool required) {
  py::object value = bound[name];
  if ((value.is_none() && !required) || PyCallable_Check(value.ptr()) != 0) return value;
  RaiseType(class_name, name, required ? "callable" : "callable or None", value);
}

py::dict BindArguments(const char* class_name, const py::object& signature, const py::args& args,
                       const py::kwargs& kwargs) {
  const py::object parameters = signature.attr("parameters");
  for (const auto& item : kwargs) {
    if (parameters.contains(item.first)) continue;
    const std::string name = py::str(item.first).cast<std::string>();
    std::string message =
        std::string(class_name) + "() got an unexpected keyword argument '" + name + "'";
    const py::list close =
        py::module_::import("difflib").attr("get_close_matches")(name, py::list(parameters), 1);
    if (!close.empty()) message += " (did you mean '" + close[0].cast<std::string>() + "'?)";
    throw py::type_error(message + "; help(dmlps." + class_name + ") lists its arguments");
  }
  py::object bound;
  try {
    bound = signature.attr("bind")(*args, **kwargs);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    throw py::type_error(std::string(class_name) + "(): " + py::str(e.value()).cast<std::string>());
  }
  bound.attr("apply_defaults")();
  return py::dict(bound.attr("arguments"));
}

}  // namespace dmlps::python
