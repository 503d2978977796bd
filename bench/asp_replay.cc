// Replays an asynchronous run's pushes in a recorded order: each push's
// gradient is computed on the model of the version it was computed on in
// the run, over the samples its worker would have taken, and applied as
// the server applies an ASP push (weight 1, scale 1/N, the server's
// momentum). Reports the accuracy every --eval-every iterations (N pushes
// each) and the iteration the target was first reached at.
//
// The order comes on stdin, one push a line: "WORKER BASE_VERSION", in the
// order the server applied them (the k-th line makes version k). From a
// real run's trace: dmlps-trace tsv server.trace | awk -F'\t'
// '$5=="push"{split($7,a,";"); print substr(a[1],8), n - substr(a[4],11); n++}'.
//
//   dmlps-bench-asp-replay [--workers 4] [--model mlp:128] [--batch 256]
//     [--lr 0.1] [--momentum 0.9] [--seed 1] [--target 0.85]
//     [--eval-every 50] < order.txt
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/sync/policy.h"
#include "dmlps/worker/epoch_cursor.h"

namespace {

struct Options {
  int64_t workers = 4;
  std::string model = "mlp:128";
  std::string data = "fashion-mnist";
  int64_t batch = 256;
  double lr = 0.1;
  double momentum = 0.9;
  uint64_t seed = 1;
  double target = 0.85;
  int64_t eval_every = 50;
};

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--workers") {
      o->workers = std::atoll(v);
    } else if (flag == "--model") {
      o->model = v;
    } else if (flag == "--data") {
      o->data = v;
    } else if (flag == "--batch") {
      o->batch = std::atoll(v);
    } else if (flag == "--lr") {
      o->lr = std::atof(v);
    } else if (flag == "--momentum") {
      o->momentum = std::atof(v);
    } else if (flag == "--seed") {
      o->seed = std::strtoull(v, nullptr, 10);
    } else if (flag == "--target") {
      o->target = std::atof(v);
    } else if (flag == "--eval-every") {
      o->eval_every = std::atoll(v);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return false;
    }
  }
  return argc % 2 == 1;
}

int Run(const Options& o) {
  using namespace dmlps;
  auto data_spec = data::ParseDataSpec(o.data);
  if (!data_spec.ok()) return std::fprintf(stderr, "%s\n", data_spec.status().message().c_str()), 1;
  auto test = data::LoadTest(*data_spec);
  auto train = data::LoadTrain(*data_spec, {0, 1});
  if (!test.ok() || !train.ok()) return std::fprintf(stderr, "no data\n"), 1;
  auto spec = model::ParseModelSpec(o.model, test->dim, std::max<int64_t>(test->classes, 2));
  if (!spec.ok()) return std::fprintf(stderr, "%s\n", spec.status().message().c_str()), 1;
  model::Model net(*spec);
  const auto n = static_cast<size_t>(net.num_params());
  std::vector<float> params(n), acc(n, 0.f), grad(n);
  net.Initialize(o.seed, params);
  sync::PolicyConfig policy;
  policy.name = "asp";
  policy.job.workers = o.workers;
  policy.job.batch = o.batch;
  const sync::ServerOptimizer step = sync::ServerOptimizerFor(policy, o.lr, o.momentum);
  auto optimizer = optim::MakeOptimizer(step.lr, step.momentum, step.nesterov, step.momentum_every,
                                        net.num_params());
  if (!optimizer.ok()) return 1;

  // As dmlps-worker: a cursor over its shard, seeded by the job's seed and its rank.
  std::vector<worker::EpochCursor> cursors;
  std::vector<int64_t> first;
  for (int64_t r = 0; r < o.workers; ++r) {
    const auto shard = data::ShardRange(train->rows(), {r, o.workers});
    cursors.emplace_back(shard.second - shard.first, o.seed * 0x9e3779b97f4a7c15ULL + r);
    first.push_back(shard.first);
  }
  std::map<int64_t, std::vector<float>> history;  // version -> model, the recent ones
  history[0] = params;
  int64_t version = 0, reached = -1;
  std::vector<int64_t> indices;
  Eigen::MatrixXf x;
  std::vector<int32_t> y;
  long long w = 0, base = 0;
  while (std::scanf("%lld %lld", &w, &base) == 2) {
    if (base < 0 || base > version || w < 0 || w >= o.workers)
      return std::fprintf(stderr, "bad push\n"), 1;
    auto it = history.find(base);
    if (it == history.end()) return std::fprintf(stderr, "version %lld gone\n", base), 1;
    cursors[static_cast<size_t>(w)].Take(o.batch, &indices);
    for (int64_t& i : indices) i += first[static_cast<size_t>(w)];
    train->Gather(indices, &x, &y);
    net.LossAndGradient(it->second, x, y, grad);
    for (size_t i = 0; i < n; ++i) acc[i] += grad[i];
    optim::ApplyAccumulated(optimizer->get(), 1.f / static_cast<float>(o.workers), params, acc);
    ++version;
    history[version] = params;
    while (!history.empty() && history.begin()->first < version - 200)
      history.erase(history.begin());
    if (version % (o.eval_every * o.workers) == 0) {
      const model::EvalResult r = net.Evaluate(params, *test);
      std::printf("iteration %lld accuracy %.4f\n", static_cast<long long>(version / o.workers),
                  r.accuracy);
      std::fflush(stdout);
      if (reached < 0 && r.accuracy >= o.target) reached = version / o.workers;
    }
  }
  std::printf("pushes %lld, target %.2f reached at iteration %lld\n",
              static_cast<long long>(version), o.target, static_cast<long long>(reached));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) return 2;
  return Run(o);
}
