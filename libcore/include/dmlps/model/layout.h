// The layout of a model the server trains without computing it (--model
// external): the named tensors, in order, whose values laid end to end make
// the flat parameter vector the server holds. The first worker announces
// it; every later worker must announce the same one.
#ifndef DMLPS_MODEL_LAYOUT_H_
#define DMLPS_MODEL_LAYOUT_H_

#include <cstdint>
#include <msgpack.hpp>
#include <span>
#include <string>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::model {

struct ModelSpec;

// One tensor of a layout: its name ("fc0.weight"), its dimensions, and
// whether it is module state (a buffer, as BatchNorm's running mean)
// rather than a parameter. State tensors come after every parameter, so
// the flat vector is the parameters, then the state (docs/module-state.md):
// the optimizer steps the parameters, and each step sets the state to the
// mean of the values the workers pushed for it.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool state = false;
  MSGPACK_DEFINE_ARRAY(name, shape, state);
  friend bool operator==(const TensorSpec&, const TensorSpec&) = default;
};

// Bounds on an announced layout, which comes off the wire: a peer cannot
// make the server allocate more than these allow.
inline constexpr int64_t kMaxLayoutTensors = 4096;
inline constexpr int64_t kMaxTensorDims = 8;
inline constexpr int64_t kMaxTensorNameBytes = 256;
// The most parameters an external model may have: 2^30 floats, 4 GiB.
inline constexpr int64_t kMaxLayoutParams = int64_t{1} << 30;

// "[128,784]".
std::string ShapeString(std::span<const int64_t> shape);

// The floats of `layout`'s state tensors, which end its flat vector; 0
// when it has none. REQUIRES: ValidateLayout(layout) ok.
int64_t StateFloats(std::span<const TensorSpec> layout);

// The floats of `layout`: the sum of its tensors' products of dimensions,
// the state's included. InvalidArgument, naming the first offending tensor,
// when the layout is empty, has no parameter tensor, a parameter after a
// state tensor, or more than kMaxLayoutTensors tensors, a name that
// is empty or longer than kMaxTensorNameBytes, a tensor with no or more than
// kMaxTensorDims dimensions, a dimension below 1, or more than
// kMaxLayoutParams parameters in all (checked before any product can
// overflow).
Result<int64_t> ValidateLayout(std::span<const TensorSpec> layout);

// The first way `announced` differs from `model`, in words ("tensor 2
// 'fc1.weight': shape [128,784], the model has [64,784]", "3 tensors, the
// model has 4", a name); empty when they are the same.
std::string FirstLayoutDifference(std::span<const TensorSpec> announced,
                                  std::span<const TensorSpec> model);

// A built-in model's layout, in the order of its flat parameter vector:
// per layer "convK.weight"/"fcK.weight" [out, in] then "...bias" [out].
std::vector<TensorSpec> LayoutOf(const ModelSpec& spec);

}  // namespace dmlps::model

#endif  // DMLPS_MODEL_LAYOUT_H_
