// Status, optimizers and config validation.
#include <doctest/doctest.h>

#include <cmath>

#include "dmlps/base/status.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/server/server.h"
#include "dmlps/worker/worker.h"

namespace dmlps {
namespace {

TEST_CASE("statuses map to sysexits codes and carry context") {
  CHECK(ExitCodeFor(Status::Ok()) == 0);
  CHECK(ExitCodeFor(Status::InvalidArgument("x")) == 64);
  CHECK(ExitCodeFor(Status::DataLoss("x")) == 65);
  CHECK(ExitCodeFor(Status::NotFound("x")) == 66);
  CHECK(ExitCodeFor(Status::Unavailable("x")) == 69);
  CHECK(ExitCodeFor(Status::Refused("x")) == 69);
  CHECK(ExitCodeFor(Status::Internal("x")) == 70);
  CHECK(ExitCodeFor(Status::IOError("x")) == 74);
  CHECK(ExitCodeFor(Status::Protocol("x")) == 76);
  CHECK(ExitCodeFor(Status::Config("x")) == 78);
  Status s = Status::NotFound("no such file").WithContext("train.idx");
  CHECK(s.message() == "train.idx: no such file");
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(Status::Ok().WithContext("x").ok());
}

TEST_CASE("Result carries a value or the status explaining its absence") {
  auto half = [](int x) -> Result<int> {
    if (x % 2 != 0) return Status::InvalidArgument("odd");
    return x / 2;
  };
  auto quarter = [&](int x) -> Result<int> {
    DMLPS_ASSIGN_OR_RETURN(int h, half(x));
    DMLPS_ASSIGN_OR_RETURN(int q, half(h));
    return q;
  };
  CHECK(*quarter(8) == 2);
  CHECK_FALSE(quarter(6).ok());
  CHECK(quarter(6).status().message() == "odd");
}

TEST_CASE("SGD and momentum take exactly the steps their formulas give") {
  std::vector<float> theta{1.f, -2.f};
  const std::vector<float> g{0.5f, 1.f};
  Result<std::unique_ptr<optim::Optimizer>> sgd = optim::MakeOptimizer(0.1, 0, 2);
  REQUIRE(sgd.ok());
  CHECK((*sgd)->Name() == "sgd");
  (*sgd)->Step(theta, g, 2.f);  // θ − 0.1 · 2 · g
  CHECK(theta[0] == doctest::Approx(0.9f));
  CHECK(theta[1] == doctest::Approx(-2.2f));

  theta = {1.f, -2.f};
  Result<std::unique_ptr<optim::Optimizer>> momentum = optim::MakeOptimizer(0.1, 0.9, 2);
  REQUIRE(momentum.ok());
  CHECK((*momentum)->Name() == "momentum");
  (*momentum)->Step(theta, g, 1.f);  // u = g; θ −= 0.1 u
  CHECK(theta[0] == doctest::Approx(0.95f));
  (*momentum)->Step(theta, g, 1.f);  // u = 0.9 g + g = 1.9 g
  CHECK(theta[0] == doctest::Approx(0.95f - 0.1f * 1.9f * 0.5f));
  CHECK(theta[1] == doctest::Approx(-2.f - 0.1f - 0.19f));

  CHECK_FALSE(optim::MakeOptimizer(0, 0, 2).ok());
  CHECK_FALSE(optim::MakeOptimizer(-1, 0, 2).ok());
  CHECK_FALSE(optim::MakeOptimizer(0.1, 1.0, 2).ok());
  CHECK_FALSE(optim::MakeOptimizer(std::nan(""), 0, 2).ok());
}

TEST_CASE("configs are validated with every problem reported") {
  server::ServerConfig server;
  CHECK(server::ValidateConfig(server).empty());
  server.job.workers = 0;
  server.job.batch = 0;
  server.job.momentum = 1.5;
  server.policy.name = "bogus";
  server.job.model = "mlp:";
  server.job.data = "csv:x";
  std::vector<std::string> problems = server::ValidateConfig(server);
  CHECK(problems.size() >= 6);

  worker::WorkerConfig worker;
  CHECK(worker::ValidateConfig(worker).empty());
  worker.straggler.slowdown = 0.5;
  worker.straggler.delay_prob = 0.5;  // without --delay-ms
  worker.threads = 0;
  worker.max_batch = -1;
  CHECK(worker::ValidateConfig(worker).size() == 4);
}

}  // namespace
}  // namespace dmlps
