// Server-side optimizers: how an aggregated gradient changes the model.
#ifndef DMLPS_OPTIM_OPTIMIZER_H_
#define DMLPS_OPTIM_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Changes `params` by one step along `scale * grad`.
  // REQUIRES: params and grad of the size the optimizer was made for.
  virtual void Step(std::span<float> params, std::span<const float> grad, float scale) = 0;
  virtual std::string Name() const = 0;
};

// Plain SGD: θ ← θ − lr · scale · g.
class Sgd : public Optimizer {
 public:
  explicit Sgd(float lr) : lr_(lr) {}
  void Step(std::span<float> params, std::span<const float> grad, float scale) override;
  std::string Name() const override { return "sgd"; }

 private:
  float lr_;
};

// Heavy-ball momentum: u ← μ · u + scale · g; θ ← θ − lr · u.
class Momentum : public Optimizer {
 public:
  Momentum(float lr, float momentum, int64_t size) : lr_(lr), mu_(momentum), velocity_(size, 0.f) {}
  void Step(std::span<float> params, std::span<const float> grad, float scale) override;
  std::string Name() const override { return "momentum"; }

 private:
  float lr_;
  float mu_;
  std::vector<float> velocity_;
};

// SGD when momentum is 0, heavy-ball momentum otherwise. InvalidArgument for
// a learning rate <= 0 or a momentum outside [0, 1).
Result<std::unique_ptr<Optimizer>> MakeOptimizer(double lr, double momentum, int64_t size);

}  // namespace dmlps::optim

#endif  // DMLPS_OPTIM_OPTIMIZER_H_
