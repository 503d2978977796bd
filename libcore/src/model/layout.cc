#include "dmlps/model/layout.h"

#include "dmlps/model/model.h"

namespace dmlps::model {
namespace {

std::string TensorName(size_t index, const TensorSpec& spec) {
  return "tensor " + std::to_string(index) + " '" + spec.name + "'";
}

}  // namespace

std::string ShapeString(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

Result<int64_t> ValidateLayout(std::span<const TensorSpec> layout) {
  if (layout.empty()) return Status::InvalidArgument("the layout names no tensor");
  if (static_cast<int64_t>(layout.size()) > kMaxLayoutTensors) {
    return Status::InvalidArgument("a layout of " + std::to_string(layout.size()) +
                                   " tensors (at most " + std::to_string(kMaxLayoutTensors) + ")");
  }
  if (layout.front().state) {
    return Status::InvalidArgument(TensorName(0, layout.front()) +
                                   ": module state before any parameter");
  }
  int64_t total = 0;
  for (size_t i = 0; i < layout.size(); ++i) {
    const TensorSpec& t = layout[i];
    if (i > 0 && layout[i - 1].state && !t.state) {
      return Status::InvalidArgument(TensorName(i, t) +
                                     ": a parameter after module state (state tensors come last)");
    }
    if (t.name.empty() || static_cast<int64_t>(t.name.size()) > kMaxTensorNameBytes) {
      return Status::InvalidArgument("tensor " + std::to_string(i) + ": a name of " +
                                     std::to_string(t.name.size()) + " bytes (1 to " +
                                     std::to_string(kMaxTensorNameBytes) + ")");
    }
    if (t.shape.empty() || static_cast<int64_t>(t.shape.size()) > kMaxTensorDims) {
      return Status::InvalidArgument(TensorName(i, t) + ": " + std::to_string(t.shape.size()) +
                                     " dimensions (1 to " + std::to_string(kMaxTensorDims) + ")");
    }
    // Every factor is at least 1 and the product stays within
    // kMaxLayoutParams before each multiplication, so nothing overflows.
    int64_t product = 1;
    for (const int64_t d : t.shape) {
      if (d < 1 || d > kMaxLayoutParams / product) {
        return Status::InvalidArgument(
            TensorName(i, t) + ": shape " + ShapeString(t.shape) +
            (d < 1 ? " has a dimension below 1"
                   : " has more than " + std::to_string(kMaxLayoutParams) + " parameters"));
      }
      product *= d;
    }
    if (product > kMaxLayoutParams - total) {
      return Status::InvalidArgument("the layout has more than " +
                                     std::to_string(kMaxLayoutParams) + " parameters (at " +
                                     TensorName(i, t) + ")");
    }
    total += product;
  }
  return total;
}

int64_t StateFloats(std::span<const TensorSpec> layout) {
  int64_t floats = 0;
  for (const TensorSpec& t : layout) {
    if (!t.state) continue;
    int64_t product = 1;
    for (const int64_t d : t.shape) product *= d;
    floats += product;
  }
  return floats;
}

std::string FirstLayoutDifference(std::span<const TensorSpec> announced,
                                  std::span<const TensorSpec> model) {
  const size_t common = std::min(announced.size(), model.size());
  for (size_t i = 0; i < common; ++i) {
    const TensorSpec& a = announced[i];
    const TensorSpec& m = model[i];
    if (a.name != m.name) {
      return TensorName(i, a) + ": the model's tensor " + std::to_string(i) + " is '" + m.name +
             "'";
    }
    if (a.shape != m.shape) {
      return TensorName(i, a) + ": shape " + ShapeString(a.shape) + ", the model has " +
             ShapeString(m.shape);
    }
    if (a.state != m.state) {
      return TensorName(i, a) + (a.state ? ": module state" : ": a parameter") +
             ", the model's is " + (m.state ? "module state" : "a parameter");
    }
  }
  if (announced.size() != model.size()) {
    return std::to_string(announced.size()) + " tensors, the model has " +
           std::to_string(model.size());
  }
  return "";
}

std::vector<TensorSpec> LayoutOf(const ModelSpec& spec) {
  std::vector<TensorSpec> layout;
  const auto shapes = spec.LayerShapes();
  const size_t convs = spec.is_cnn() ? 2 : 0;
  for (size_t l = 0; l < shapes.size(); ++l) {
    const std::string prefix =
        l < convs ? "conv" + std::to_string(l) : "fc" + std::to_string(l - convs);
    layout.push_back({prefix + ".weight", {shapes[l].first, shapes[l].second}});
    layout.push_back({prefix + ".bias", {shapes[l].first}});
  }
  return layout;
}

}  // namespace dmlps::model
