// dmlps._dmlps: a dmlps worker whose gradients a Python function computes,
// and the pieces of the library Python callers want beside it (the data
// reader, the built-in models' gradients for checking a port of them).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/base/printable.h"
#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"
#include "dmlps/server/checkpoint.h"
#include "dmlps/worker/computation.h"
#include "dmlps/worker/evaluator_client.h"
#include "dmlps/worker/worker.h"
#include "errors.h"
#include "options.h"

namespace py = pybind11;

namespace dmlps::python {
namespace {

// The arrays the binding hands Python, one role each (a callback's params,
// its grad, ...): NumPy arrays that own their memory, so that one a caller
// keeps stays valid after its call, its worker and run() are gone, and
// holds what its call left in it. Values are copied in before the call
// and, for an array the worker reads back, out after it: the worker's own
// buffers (and the pushes sent from them) are never Python's to write.
// The last call's array is lent again only when nothing but this holds it;
// one that Python kept (or a view or tensor over it) is left to it, and
// the next call gets a new one.
// REQUIRES: the GIL for every member, destruction included (Release).
template <typename T>
class LentArray {
 public:
  // An array of `n` values, writable by Python when `writeable`, that no
  // earlier caller holds; it holds what it held when last lent (zeros when
  // new).
  py::array_t<T> Take(size_t n, bool writeable) {
    if (!array_ || array_.ref_count() > 1 || !Holds(n)) {
      py::array_t<T> fresh(static_cast<py::ssize_t>(n));
      std::fill_n(fresh.mutable_data(), n, T{});
      array_ = std::move(fresh);
    }
    auto& flags = py::detail::array_proxy(array_.ptr())->flags;
    if (writeable) {
      flags |= py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    } else {
      flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    }
    return py::reinterpret_borrow<py::array_t<T>>(array_);
  }
  // Take, holding a copy of `values`.
  py::array_t<T> Copy(std::span<const T> values, bool writeable) {
    py::array_t<T> array = Take(values.size(), writeable);
    std::copy(values.begin(), values.end(), Data());
    return array;
  }
  // Copies what the array last lent holds into `out`; false, copying
  // nothing, when Python has reshaped, resized or retyped it in place.
  bool CopyTo(std::span<T> out) const {
    if (!Holds(out.size())) return false;
    const T* data = Data();
    std::copy(data, data + out.size(), out.begin());
    return true;
  }
  // Lets go of the array (Python's, if it kept it).
  void Release() { array_ = py::object(); }

 private:
  // Whether the array is still `n` contiguous values of T, as lent.
  bool Holds(size_t n) const {
    if (!py::array_t<T>::check_(array_)) return false;
    const auto* proxy = py::detail::array_proxy(array_.ptr());
    return proxy->nd == 1 && static_cast<size_t>(proxy->dimensions[0]) == n &&
           proxy->strides[0] == static_cast<py::ssize_t>(sizeof(T));
  }
  T* Data() const { return reinterpret_cast<T*>(py::detail::array_proxy(array_.ptr())->data); }

  py::object array_;
};

py::dict JobDict(const worker::JobInfo& job) {
  py::dict d;
  worker::VisitJobFields([&d](const char* name, const auto& field) { d[name] = field; }, job);
  return d;
}

// Runs a Python callback `call` and turns whatever it raises into a Status
// (one line for the server's log: the type and message, no traceback),
// keeping the first exception in *error for the caller to raise again.
// REQUIRES: the GIL.
template <typename F>
Status CallKeeping(const char* what, std::exception_ptr* error, F&& call) {
  try {
    call();
    return Status::Ok();
  } catch (py::error_already_set& e) {
    std::string message = std::string("the ") + what + " callback raised " +
                          py::str(e.type().attr("__name__")).cast<std::string>() + ": " +
                          py::str(e.value()).cast<std::string>();
    if (*error == nullptr) *error = std::current_exception();
    return Status::Internal(message);
  } catch (const std::exception& e) {  // a result that does not convert
    if (*error == nullptr) *error = std::current_exception();
    return Status::Internal(std::string("the ") + what + " callback: " + e.what());
  }
}

// A Computation that calls Python, taking the GIL for each call. The first
// exception a callback raises is kept in *error (which outlives this) for
// Worker.run to raise again.
class PyComputation : public worker::Computation {
 public:
  PyComputation(int64_t num_samples, int64_t num_params, py::object compute, py::object on_join,
                py::object local_step, std::exception_ptr* error, std::atomic<bool>* welcomed)
      : num_samples_(num_samples),
        num_params_(num_params),
        compute_(std::move(compute)),
        on_join_(std::move(on_join)),
        local_step_(std::move(local_step)),
        error_(error),
        welcomed_(welcomed) {}
  ~PyComputation() override {
    py::gil_scoped_acquire gil;
    compute_ = py::object();
    on_join_ = py::object();
    local_step_ = py::object();
    for (LentArray<float>* lent : {&params_, &grad_, &local_params_, &local_grad_}) lent->Release();
    sample_ids_.Release();
  }

  bool TakesLocalSteps() const override { return !local_step_.is_none(); }
  // params goes back into the worker's copy as the call left it.
  Status LocalStep(std::span<float> params, std::span<const float> grad) override {
    py::gil_scoped_acquire gil;
    Status called = Call("local_step", [&] {
      local_step_(local_params_.Copy(params, true), local_grad_.Copy(grad, false));
    });
    if (!called.ok()) return called;
    if (!local_params_.CopyTo(params))
      return Status::InvalidArgument("local_step reshaped, resized or retyped params");
    return Status::Ok();
  }

  Status Join(const worker::JobInfo& job) override {
    welcomed_->store(true);
    py::gil_scoped_acquire gil;
    if (num_params_ < 0) num_params_ = job.num_params;  // the server's layout, taken as given
    if (on_join_.is_none()) return Status::Ok();
    return Call("on_join", [&] {
      py::object samples = on_join_(JobDict(job));
      if (!samples.is_none()) num_samples_ = samples.cast<int64_t>();
    });
  }
  int64_t num_params() const override { return num_params_; }
  int64_t num_samples() const override { return num_samples_; }

  Result<double> Compute(std::span<const float> params, std::span<const int64_t> sample_ids,
                         std::span<float> grad) override {
    py::gil_scoped_acquire gil;
    double loss = 0;
    Status called = Call("compute", [&] {
      py::object result = compute_(params_.Copy(params, false), sample_ids_.Copy(sample_ids, false),
                                   grad_.Take(grad.size(), true));
      // float() of it: a Python float, a NumPy scalar, a 1-element tensor; a
      // TypeError otherwise, kept like any exception the callback raises.
      loss = py::float_(result).cast<double>();
    });
    if (!called.ok()) return called;
    // The gradient as the call left it: what the callback writes later into
    // a grad it kept changes that array only, never a push.
    if (!grad_.CopyTo(grad))
      return Status::InvalidArgument("compute reshaped, resized or retyped grad");
    return loss;
  }

 private:
  template <typename F>
  Status Call(const char* what, F&& call) {
    return CallKeeping(what, error_, std::forward<F>(call));
  }

  int64_t num_samples_;
  int64_t num_params_;
  py::object compute_;
  py::object on_join_;
  py::object local_step_;
  std::exception_ptr* error_;
  std::atomic<bool>* welcomed_;  // set once the server has welcomed the worker
  LentArray<float> params_;
  LentArray<int64_t> sample_ids_;
  LentArray<float> grad_;
  LentArray<float> local_params_;
  LentArray<float> local_grad_;
};

// Where SIGINT stops the worker running on the main thread, while one does.
std::atomic<std::atomic<int>*> g_interrupt_target{nullptr};

void OnInterrupt(int signal) {
  if (std::atomic<int>* target = g_interrupt_target.load()) target->store(signal);
}

// Takes SIGINT from Python for as long as it lives, when made on the main
// thread (signal handlers are the main thread's business in Python).
class InterruptScope {
 public:
  InterruptScope(std::atomic<int>* target, bool main_thread) : active_(main_thread) {
    if (!active_) return;
    g_interrupt_target.store(target);
    struct sigaction action {};
    action.sa_handler = OnInterrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptScope() {
    if (!active_) return;
    sigaction(SIGINT, &previous_, nullptr);
    g_interrupt_target.store(nullptr);
  }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  bool active_;
  struct sigaction previous_ {};
};

// Runs `run` (returning a Result) with the GIL released and SIGINT routed
// to *stop while on the main thread; then raises, in this order, the
// exception a callback kept in *error, the run's error as its dmlps.Error
// (RaiseStatus: *welcomed tells a lost server from one never reached), or
// KeyboardInterrupt when SIGINT ended it. `signal_of` reads the signal
// from the run's value.
template <typename T, typename Run, typename SignalOf>
T RunWithoutGil(std::atomic<int>* stop, std::exception_ptr* error, std::atomic<bool>* welcomed,
                Run&& run, SignalOf&& signal_of) {
  *error = nullptr;
  stop->store(0);
  welcomed->store(false);
  py::object threading = py::module_::import("threading");
  const bool main_thread = threading.attr("current_thread")().is(threading.attr("main_thread")());
  Result<T> result = Status::Ok();
  {
    InterruptScope interrupts(stop, main_thread);
    py::gil_scoped_release released;
    result = run();
  }
  if (*error != nullptr) std::rethrow_exception(std::exchange(*error, nullptr));
  if (!result.ok()) RaiseStatus(result.status(), welcomed->load());
  if (signal_of(*result) == SIGINT) {
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }
  return std::move(result).value();
}

py::dict ReportDict(const worker::WorkerReport& report) {
  py::dict d;
  d["rank"] = report.rank;
  d["steps"] = report.steps;
  d["samples"] = report.samples;
  d["compute_s"] = report.compute_s;
  d["straggle_s"] = report.straggle_s;
  d["wait_s"] = report.wait_s;
  d["comm_s"] = report.comm_s;
  d["seconds"] = report.seconds;
  d["stop_reason"] = report.stop_reason;
  d["reconnects"] = report.reconnects;
  d["signal"] = report.signal;
  return d;
}

class Worker {
 public:
  Worker(worker::WorkerConfig config, int64_t num_samples, int64_t num_params, py::object compute,
         py::object on_join, py::object local_step)
      : config_(std::move(config)),
        num_samples_(num_samples),
        num_params_(num_params),
        compute_(std::move(compute)),
        on_join_(std::move(on_join)),
        local_step_(std::move(local_step)) {
    std::vector<std::string> problems = worker::ValidateConfig(config_);
    if (num_samples_ < 1 && on_join_.is_none())
      problems.push_back("num_samples must be at least 1");
    if (!problems.empty()) {
      std::string message;
      for (const std::string& p : problems) message += (message.empty() ? "" : "; ") + p;
      RaiseInvalid(message);
    }
  }

  py::dict Run() {
    auto computation = std::make_unique<PyComputation>(num_samples_, num_params_, compute_,
                                                       on_join_, local_step_, &error_, &welcomed_);
    const worker::WorkerReport report = RunWithoutGil<worker::WorkerReport>(
        &stop_, &error_, &welcomed_,
        [&] { return worker::RunWorker(config_, std::move(computation), &stop_); },
        [](const worker::WorkerReport& r) { return r.signal; });
    return ReportDict(report);
  }

  void Stop() { stop_.store(SIGTERM); }

 private:
  worker::WorkerConfig config_;
  int64_t num_samples_;
  int64_t num_params_;
  py::object compute_;
  py::object on_join_;
  py::object local_step_;
  std::atomic<int> stop_{0};
  std::atomic<bool> welcomed_{false};
  std::exception_ptr error_;
};

// An evaluator process's loop (worker::RunEvaluator) whose scores a Python
// function computes: evaluate(params) gets each snapshot as a read-only
// NumPy array of its own (a copy, valid as long as it is kept) and returns
// (accuracy, loss).
class Evaluator {
 public:
  Evaluator(worker::EvaluatorConfig config, py::object evaluate, py::object on_join)
      : config_(std::move(config)), evaluate_(std::move(evaluate)), on_join_(std::move(on_join)) {}

  py::dict Run() {
    worker::EvaluatorConfig config = config_;
    config.on_join = [this](const std::string& model, int64_t num_params) {
      welcomed_.store(true);
      if (on_join_.is_none()) return Status::Ok();
      py::gil_scoped_acquire gil;
      return Call("on_join", [&] { on_join_(model, num_params); });
    };
    const worker::EvaluateFn evaluate =
        [this](std::span<const float> params) -> Result<model::EvalResult> {
      py::gil_scoped_acquire gil;
      model::EvalResult result;
      Status called = Call("evaluate", [&] {
        auto [accuracy, loss] =
            evaluate_(snapshot_.Copy(params, false)).cast<std::pair<double, double>>();
        result.accuracy = accuracy;
        result.loss = loss;
      });
      if (!called.ok()) return called;
      return result;
    };
    const worker::EvaluatorReport report = RunWithoutGil<worker::EvaluatorReport>(
        &stop_, &error_, &welcomed_, [&] { return worker::RunEvaluator(config, evaluate, &stop_); },
        [](const worker::EvaluatorReport& r) { return r.signal; });
    py::dict d;
    d["snapshots"] = report.snapshots;
    d["stop_reason"] = report.stop_reason;
    d["signal"] = report.signal;
    return d;
  }

  void Stop() { stop_.store(SIGTERM); }

 private:
  template <typename F>
  Status Call(const char* what, F&& call) {
    return CallKeeping(what, &error_, std::forward<F>(call));
  }

  worker::EvaluatorConfig config_;
  py::object evaluate_;
  py::object on_join_;
  LentArray<float> snapshot_;  // evaluate's params
  std::atomic<int> stop_{0};
  std::atomic<bool> welcomed_{false};
  std::exception_ptr error_;
};

// The value, or the result's status raised as its dmlps.Error.
template <typename T>
T ValueOrRaise(Result<T> result) {
  if (!result.ok()) RaiseStatus(result.status());
  return std::move(result).value();
}

// A data set as (x: n x dim float32, y: n int64).
py::tuple Arrays(const data::Dataset& dataset) {
  const int64_t rows = dataset.rows();
  py::array_t<float> x({rows, dataset.dim});
  py::array_t<int64_t> y(rows);
  std::vector<int64_t> all(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) all[i] = i;
  Eigen::MatrixXf columns;
  std::vector<int32_t> labels;
  dataset.Gather(all, &columns, &labels);  // dim x rows, column-major: x's rows
  std::copy(columns.data(), columns.data() + columns.size(), x.mutable_data());
  std::copy(labels.begin(), labels.end(), y.mutable_data());
  return py::make_tuple(x, y);
}

// Loads with the GIL released; a failure is a ValueError.
template <typename F>
py::tuple LoadArrays(F&& load) {
  data::Dataset dataset;
  {
    py::gil_scoped_release released;
    Result<data::Dataset> loaded = load();
    if (!loaded.ok()) {
      py::gil_scoped_acquire gil;
      RaiseStatus(loaded.status());
    }
    dataset = std::move(*loaded);
  }
  return Arrays(dataset);
}

// The training rows of shard `index` of `count` of a data spelling
// (data::ParseDataSpec), as (x: n x dim float32, y: n int64).
py::tuple LoadTrain(const std::string& spelling, int64_t index, int64_t count) {
  if (count < 1 || index < 0 || index >= count) RaiseInvalid("no such shard");
  const data::DataSpec spec = ValueOrRaise(data::ParseDataSpec(spelling));
  return LoadArrays([&] { return data::LoadTrain(spec, data::Shard{index, count}); });
}

// The test rows of a data spelling, as LoadTrain gives the training rows.
py::tuple LoadTest(const std::string& spelling) {
  const data::DataSpec spec = ValueOrRaise(data::ParseDataSpec(spelling));
  return LoadArrays([&] { return data::LoadTest(spec); });
}

// A built-in model's mean loss and gradient at `params` on the samples
// (rows of x, labels y): what a port of the model must compute.
py::tuple ModelLossAndGradient(const std::string& name,
                               py::array_t<float, py::array::c_style | py::array::forcecast> params,
                               py::array_t<float, py::array::c_style | py::array::forcecast> x,
                               py::array_t<int64_t, py::array::c_style | py::array::forcecast> y,
                               int64_t classes) {
  if (x.ndim() != 2 || y.ndim() != 1 || x.shape(0) != y.shape(0) || y.shape(0) < 1)
    RaiseInvalid("x must be n x dim and y n labels, n >= 1");
  model::Model model(ValueOrRaise(model::ParseModelSpec(name, x.shape(1), classes)));
  if (params.ndim() != 1 || params.shape(0) != model.num_params())
    RaiseInvalid(name + " has " + std::to_string(model.num_params()) + " parameters");
  Eigen::MatrixXf columns = Eigen::Map<const Eigen::MatrixXf>(x.data(), x.shape(1), x.shape(0));
  std::vector<int32_t> labels(y.data(), y.data() + y.shape(0));
  for (int32_t label : labels) {
    if (label < 0 || label >= classes) RaiseInvalid("a label is outside [0, classes)");
  }
  py::array_t<float> grad(model.num_params());
  const double loss = model.LossAndGradient(
      std::span<const float>(params.data(), static_cast<size_t>(params.shape(0))), columns, labels,
      std::span<float>(grad.mutable_data(), static_cast<size_t>(grad.shape(0))));
  return py::make_tuple(loss, grad);
}

// A built-in model's initial parameters, as dmlps-server draws them.
py::array_t<float> ModelInitialize(const std::string& name, int64_t input_dim, int64_t classes,
                                   uint64_t seed) {
  model::Model model(ValueOrRaise(model::ParseModelSpec(name, input_dim, classes)));
  py::array_t<float> params(model.num_params());
  model.Initialize(seed, std::span<float>(params.mutable_data(), params.size()));
  return params;
}

// A checkpoint file as a dict: its model (the slice of a sharded server's
// shard), layout and counts, checked as dmlps-server --resume checks it.
py::dict ReadCheckpoint(const std::string& path) {
  server::Checkpoint checkpoint = ValueOrRaise(server::ReadCheckpointFile(path));
  py::dict d;
  const std::vector<float>& values = *checkpoint.params;
  py::array_t<float> params(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), params.mutable_data());
  d["params"] = params;
  py::list layout;
  for (const model::TensorSpec& t : checkpoint.layout) {
    layout.append(py::make_tuple(t.name, py::tuple(py::cast(t.shape)), t.state));
  }
  d["layout"] = layout;
  d["model"] = checkpoint.model;
  d["policy"] = checkpoint.policy;
  d["optimizer"] = checkpoint.optimizer;
  d["workers"] = checkpoint.workers;
  d["iteration"] = checkpoint.iteration;
  d["version"] = checkpoint.version;
  d["samples"] = checkpoint.samples;
  d["seconds"] = checkpoint.seconds;
  d["optimizer_steps"] = checkpoint.optimizer_steps;
  d["shard_index"] = checkpoint.shard_index;
  d["shard_count"] = checkpoint.shard_count;
  d["slice_begin"] = checkpoint.slice_begin;
  d["model_params"] =
      checkpoint.model_params > 0 ? checkpoint.model_params : static_cast<int64_t>(values.size());
  return d;
}

// A model layout a worker offers: the tensors' names and shapes in the flat
// vector's order, and their initial values.
struct LayoutOffer {
  std::vector<model::TensorSpec> tensors;
  std::vector<float> values;
};

// Checks a layout (a sequence of (name, shape) for parameters and (name,
// shape, True) for module state, which comes last) and its initial values
// (none, or a flat float array as long as the layout) against each other.
LayoutOffer MakeLayoutOffer(const py::object& layout, const py::object& values) {
  LayoutOffer offer;
  int64_t total = 0;
  for (const py::handle& entry : layout) {
    const auto items = entry.cast<py::sequence>();
    if (items.size() != 2 && items.size() != 3) {
      RaiseInvalid("layout: each tensor is (name, shape) or (name, shape, state)");
    }
    model::TensorSpec tensor{items[0].cast<std::string>(), items[1].cast<std::vector<int64_t>>(),
                             items.size() == 3 && items[2].cast<bool>()};
    int64_t size = 1;
    for (int64_t d : tensor.shape) {
      if (d < 1) {
        RaiseInvalid("layout: tensor '" + tensor.name + "' has a dimension below 1");
      }
      size *= d;
    }
    if (!tensor.state && !offer.tensors.empty() && offer.tensors.back().state) {
      RaiseInvalid("layout: parameter '" + tensor.name +
                   "' after module state (state tensors come last)");
    }
    total += size;
    offer.tensors.push_back(std::move(tensor));
  }
  if (!values.is_none()) {
    auto array = values.cast<py::array_t<float, py::array::c_style | py::array::forcecast>>();
    if (array.ndim() != 1 || array.shape(0) != total)
      RaiseInvalid("initial_values must be a flat array of the layout's " + std::to_string(total) +
                   " floats");
    offer.values.assign(array.data(), array.data() + total);
  }
  return offer;
}

// The one place a worker's offered layout meets its config: the worker
// announces it in its Hello. A server of --model external takes the first
// worker's layout and values and refuses any other layout; a server of a
// built-in model fixes the layout itself and ignores the announcement.
void HandLayoutToConfig(const LayoutOffer& offer, worker::WorkerConfig* config) {
  if (offer.tensors.empty()) return;
  config->announce_layout = true;
  config->layout.clear();
  config->layout = offer.tensors;
  if (!offer.values.empty()) {
    config->initial_values = std::make_shared<const std::vector<float>>(offer.values);
  }
}

// Writes a file that dmlps-server --model external --initial starts from:
// the layout and values, as a checkpoint of no run.
void WriteInitial(const std::string& path, const py::object& layout, const py::object& values) {
  LayoutOffer offer = MakeLayoutOffer(layout, values);
  if (offer.tensors.empty()) RaiseInvalid("write_initial: the layout is empty");
  if (offer.values.empty()) RaiseInvalid("write_initial: no values");
  server::Checkpoint checkpoint;
  checkpoint.model = "external";
  checkpoint.policy = "initial";
  checkpoint.optimizer = "none";
  checkpoint.layout = std::move(offer.tensors);
  checkpoint.params = std::make_shared<const std::vector<float>>(std::move(offer.values));
  if (Status written = server::WriteCheckpointFile(path, checkpoint); !written.ok()) {
    RaiseStatus(written);
  }
}

// The worker logs to standard error, as dmlps-worker does (standard output
// is the Python program's), at info or as SPDLOG_LEVEL says.
void SetupLogging() {
  auto logger = spdlog::stderr_logger_mt("dmlps");
  logger->set_formatter(dmlps::PrintableLogFormatter("%H:%M:%S.%e dmlps: %l: %v"));
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
  spdlog::cfg::load_env_levels();
}

void SetLogLevel(const std::string& level) {
  const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    RaiseInvalid("unknown log level '" + level +
                 "' (trace, debug, info, warning, error, critical, off)");
  }
  spdlog::set_level(parsed);
}

// What run() raises for a peer whose server does not answer, refuses it
// or goes away, between what its callbacks raise (`callbacks`) and what
// else it may raise (`others`); `refused` says what the server may refuse,
// `lost` how long it may be silent.
std::string PeerRaises(const std::string& callbacks, const std::string& refused,
                       const std::string& lost, const std::string& others) {
  return "Raises " + callbacks +
         "; dmlps.UnavailableError when no server answers within connect_timeout_ms; "
         "dmlps.RefusedError when the server refuses " +
         refused + "; dmlps.ServerLostError when the server " + lost + "; " + others +
         "; KeyboardInterrupt on Ctrl-C.";
}

// "Worker" as "worker".
std::string Lowered(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// Makes dmlps.`name`, a peer of the server: its signature and docstring
// from the rows of options.cc (`arguments`), __init__ making it with
// `make` from the arguments bound to the signature, run() (documented by
// `run_doc`) and stop().
template <typename Peer, typename Make>
void AddPeer(py::module_& m, const char* name, const ClassArguments& arguments, Make make,
             const std::string& run_doc) {
  py::class_<Peer> cls(m, name, arguments.doc.c_str());
  {
    py::options options;
    options.disable_function_signatures();  // the class's __signature__ says it
    cls.def(py::init([name, make](const py::args& args, const py::kwargs& kwargs) {
              return make(
                  BindArguments(name, py::type::of<Peer>().attr("__signature__"), args, kwargs));
            }),
            ("Makes the " + Lowered(name) + "; help(dmlps." + name +
             ") describes the arguments. It joins the server when run() is called.")
                .c_str());
    cls.def("run", &Peer::Run, Wrap(run_doc).c_str());
    cls.def("stop", &Peer::Stop, "stop(): makes run() return soon (from another thread).");
  }
  cls.attr("__signature__") = arguments.signature;
  cls.attr("__module__") = "dmlps";
}

void AddWorker(py::module_& m) {
  AddPeer<Worker>(
      m, "Worker", WorkerArguments(),
      [](const py::dict& bound) {
        worker::WorkerConfig config = MakeWorkerConfig(bound);
        const py::object layout = bound["layout"];
        const py::object initial_values = bound["initial_values"];
        if (!layout.is_none()) {
          HandLayoutToConfig(MakeLayoutOffer(layout, initial_values), &config);
        } else if (!initial_values.is_none()) {
          RaiseInvalid("initial_values needs a layout");
        }
        return std::make_unique<Worker>(std::move(config),
                                        IntegerArgument("Worker", bound, "num_samples"),
                                        IntegerArgument("Worker", bound, "num_params"),
                                        CallableArgument("Worker", bound, "compute", true),
                                        CallableArgument("Worker", bound, "on_join", false),
                                        CallableArgument("Worker", bound, "local_step", false));
      },
      "run() -> dict: trains until the server stops this worker and returns its report (rank, "
      "steps, samples, compute_s, straggle_s, wait_s, comm_s, seconds, stop_reason, "
      "reconnects, signal).\n\n" +
          PeerRaises("what a callback raised", "this worker (its layout, rank or secret)",
                     "goes away for longer than reconnect_timeout_ms",
                     "dmlps.ConfigError when this worker does not fit the server's job (another "
                     "number of parameters); dmlps.ProtocolError when the server speaks another "
                     "protocol; dmlps.InvalidArgumentError when a callback reshapes an array it "
                     "must fill in place"));
}

void AddEvaluator(py::module_& m) {
  AddPeer<Evaluator>(
      m, "Evaluator", EvaluatorArguments(),
      [](const py::dict& bound) {
        return std::make_unique<Evaluator>(MakeEvaluatorConfig(bound),
                                           CallableArgument("Evaluator", bound, "evaluate", true),
                                           CallableArgument("Evaluator", bound, "on_join", false));
      },
      "run() -> dict: scores snapshots until the server ends the run; returns {'snapshots', "
      "'stop_reason', 'signal'}.\n\n" +
          PeerRaises("what evaluate or on_join raised",
                     "this evaluator (no --evaluator, no or another job secret)",
                     "is silent for server_timeout_ms",
                     "dmlps.InternalError when evaluate returns an accuracy outside [0, 1] or a "
                     "loss that is negative or not finite"));
}

}  // namespace
}  // namespace dmlps::python

PYBIND11_MODULE(_dmlps, m) {
  namespace dp = dmlps::python;
  m.doc() = "dmlps workers whose gradients Python computes (see the dmlps package)";
  m.attr("__version__") = DMLPS_VERSION;
  dp::AddErrors(m);
  dp::SetupLogging();
  m.def("set_log_level", &dp::SetLogLevel, py::arg("level"),
        "How much the workers log to standard error: trace, debug, info (the default), "
        "warning, error, critical or off");
  dp::AddWorker(m);
  dp::AddEvaluator(m);
  m.def("load_train", &dp::LoadTrain, py::arg("data") = "fashion-mnist", py::arg("shard_index") = 0,
        py::arg("shard_count") = 1);
  m.def("load_test", &dp::LoadTest, py::arg("data") = "fashion-mnist");
  m.def("model_loss_and_gradient", &dp::ModelLossAndGradient, py::arg("model"), py::arg("params"),
        py::arg("x"), py::arg("y"), py::arg("classes"));
  m.def("model_initialize", &dp::ModelInitialize, py::arg("model"), py::arg("input_dim"),
        py::arg("classes"), py::arg("seed") = 0);
  m.def("write_initial", &dp::WriteInitial, py::arg("path"), py::arg("layout"), py::arg("values"),
        "write_initial(path, layout, values): writes the file that dmlps-server --model "
        "external --initial path starts from, so that no peer chooses the model: layout as "
        "dmlps.Worker takes it ([(name, shape)], then (name, shape, True) for module state), "
        "values a flat float32 array as long. dmlps.torch.save_initial writes one from a "
        "module.");
  m.def("read_checkpoint", &dp::ReadCheckpoint, py::arg("path"),
        "read_checkpoint(path) -> dict: a dmlps-server checkpoint file, checked as --resume "
        "checks it (dmlps.NotFoundError, or dmlps.DataLossError naming the file and what is "
        "wrong): 'params' (float32, the "
        "flat vector: parameters then module state; a server shard's file holds its slice, "
        "from 'slice_begin' of 'model_params'), 'layout' ([(name, shape, is_state)], empty "
        "for a built-in model), 'model', 'policy', 'optimizer', 'workers', 'iteration', "
        "'version', 'samples', 'seconds', 'optimizer_steps', 'shard_index', 'shard_count', "
        "'slice_begin', 'model_params'.");
}
