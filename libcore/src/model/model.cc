#include "dmlps/model/model.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <random>
#include <system_error>
#include <utility>

namespace dmlps::model {
namespace {

constexpr int64_t kMaxWidth = 65536;

using ConstMatrixMap = Eigen::Map<const Eigen::MatrixXf>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf>;
using MatrixMap = Eigen::Map<Eigen::MatrixXf>;
using VectorMap = Eigen::Map<Eigen::VectorXf>;

// Layer widths from the input to the logits: input_dim, hidden..., classes.
std::vector<int64_t> LayerWidths(const ModelSpec& spec) {
  std::vector<int64_t> widths;
  widths.reserve(spec.hidden.size() + 2);
  widths.push_back(spec.input_dim);
  widths.insert(widths.end(), spec.hidden.begin(), spec.hidden.end());
  widths.push_back(spec.classes);
  return widths;
}

// Parses one hidden width of `text`, or says why it is not one.
Result<int64_t> ParseWidth(std::string_view entry, std::string_view text) {
  std::string context = "model \"" + std::string(text) + "\"";
  if (entry.empty()) {
    return Status::InvalidArgument(context + ": empty hidden layer width");
  }
  int64_t width = 0;
  const char* first = entry.data();
  const char* last = entry.data() + entry.size();
  auto [ptr, ec] = std::from_chars(first, last, width);
  if (ec == std::errc::result_out_of_range) {
    return Status::InvalidArgument(context + ": hidden layer width \"" + std::string(entry) +
                                   "\" is out of range 1.." + std::to_string(kMaxWidth));
  }
  if (ec != std::errc() || ptr != last) {
    return Status::InvalidArgument(context + ": hidden layer width \"" + std::string(entry) +
                                   "\" is not a whole number");
  }
  if (width < 1 || width > kMaxWidth) {
    return Status::InvalidArgument(context + ": hidden layer width " + std::to_string(width) +
                                   " is out of range 1.." + std::to_string(kMaxWidth));
  }
  return width;
}

// Counts the parameters of `widths` roughly, in double, so that no sum can wrap.
double ApproxParamCount(const std::vector<int64_t>& widths) {
  double total = 0;
  for (size_t l = 1; l < widths.size(); ++l) {
    total += static_cast<double>(widths[l]) * static_cast<double>(widths[l - 1]) +
             static_cast<double>(widths[l]);
  }
  return total;
}

// Runs `x` through every layer; (*activations)[l] receives the output of layer
// l: ReLU'd for hidden layers, the logits for the last.
void Forward(const ModelSpec& spec, std::span<const float> params, const Eigen::MatrixXf& x,
             std::vector<Eigen::MatrixXf>* activations) {
  const size_t layers = activations->size();
  const Eigen::Index n = x.cols();
  Eigen::Index in = spec.input_dim;
  int64_t offset = 0;
  for (size_t l = 0; l < layers; ++l) {
    const Eigen::Index out = l + 1 < layers ? spec.hidden[l] : spec.classes;
    const float* base = params.data() + offset;
    ConstMatrixMap w(base, out, in);
    ConstVectorMap b(base + out * in, out);
    Eigen::MatrixXf& a = (*activations)[l];
    a.resize(out, n);  // no allocation when the shape is unchanged
    if (l == 0) {
      a.noalias() = w * x;
    } else {
      a.noalias() = w * (*activations)[l - 1];
    }
    a.colwise() += b;
    if (l + 1 < layers) a = a.cwiseMax(0.0f);
    offset += out * in + out;
    in = out;
  }
}

}  // namespace

std::string ModelSpec::Name() const {
  if (hidden.empty()) return "softmax";
  std::string name = "mlp:";
  for (size_t i = 0; i < hidden.size(); ++i) {
    if (i > 0) name += ',';
    name += std::to_string(hidden[i]);
  }
  return name;
}

Result<ModelSpec> ParseModelSpec(std::string_view text, int64_t input_dim, int64_t classes) {
  std::string context = "model \"" + std::string(text) + "\"";
  if (input_dim < 1) {
    return Status::InvalidArgument(context + ": input size " + std::to_string(input_dim) +
                                   " must be at least 1");
  }
  if (classes < 2) {
    return Status::InvalidArgument(context + ": class count " + std::to_string(classes) +
                                   " must be at least 2");
  }
  ModelSpec spec;
  spec.input_dim = input_dim;
  spec.classes = classes;
  constexpr std::string_view kMlpPrefix = "mlp:";
  if (text == "softmax") {
    // Softmax regression: no hidden layer.
  } else if (text.starts_with(kMlpPrefix)) {
    std::string_view rest = text.substr(kMlpPrefix.size());
    if (rest.empty()) {
      return Status::InvalidArgument(context + ": mlp needs at least one hidden layer width, "
                                     "as in mlp:128 or mlp:256,128");
    }
    while (true) {
      size_t comma = rest.find(',');
      std::string_view entry = rest.substr(0, comma);
      DMLPS_ASSIGN_OR_RETURN(int64_t width, ParseWidth(entry, text));
      spec.hidden.push_back(width);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  } else {
    return Status::InvalidArgument(context + ": unknown model; expected softmax or mlp:H1[,H2...]");
  }
  // The count must fit an int64_t, with room for byte offsets into the vector.
  if (ApproxParamCount(LayerWidths(spec)) > 0x1.0p60) {
    return Status::InvalidArgument(context + ": too many parameters for input size " +
                                   std::to_string(input_dim) + " and " + std::to_string(classes) +
                                   " classes");
  }
  return spec;
}

Model::Model(ModelSpec spec) : spec_(std::move(spec)) {
  std::vector<int64_t> widths = LayerWidths(spec_);
  for (size_t l = 1; l < widths.size(); ++l) num_params_ += widths[l] * widths[l - 1] + widths[l];
  activations_.resize(widths.size() - 1);
  deltas_.resize(widths.size() - 1);
}

void Model::Initialize(uint64_t seed, std::span<float> params) const {
  assert(static_cast<int64_t>(params.size()) == num_params_);
  std::mt19937_64 engine(seed);
  std::vector<int64_t> widths = LayerWidths(spec_);
  int64_t offset = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    const int64_t in = widths[l];
    const int64_t out = widths[l + 1];
    const double limit = std::sqrt(6.0 / static_cast<double>(in));
    float* w = params.data() + offset;
    offset += out * in + out;
    // Top 53 bits of each draw make a double in [0, 1): the same numbers on
    // every standard library, unlike std::uniform_real_distribution.
    for (int64_t i = 0; i < out * in; ++i) {
      double unit = static_cast<double>(engine() >> 11) * 0x1.0p-53;
      w[i] = static_cast<float>(limit * (2.0 * unit - 1.0));
    }
    std::fill(w + out * in, w + out * in + out, 0.0f);
  }
}

double Model::LossAndGradient(std::span<const float> params, const Eigen::MatrixXf& x,
                              std::span<const int32_t> y, std::span<float> grad) {
  assert(static_cast<int64_t>(params.size()) == num_params_);
  assert(static_cast<int64_t>(grad.size()) == num_params_);
  assert(x.rows() == spec_.input_dim);
  assert(x.cols() == static_cast<Eigen::Index>(y.size()) && !y.empty());
  Forward(spec_, params, x, &activations_);

  const size_t layers = activations_.size();
  const Eigen::Index n = x.cols();
  const Eigen::Index classes = spec_.classes;
  const float inv_n = 1.0f / static_cast<float>(n);

  // Softmax with the column maximum subtracted, the loss, and dL/dlogits in one
  // pass over each contiguous column.
  const Eigen::MatrixXf& logits = activations_[layers - 1];
  Eigen::MatrixXf& top_delta = deltas_[layers - 1];
  top_delta.resize(classes, n);
  double loss_sum = 0.0;
  for (Eigen::Index j = 0; j < n; ++j) {
    const float* z = logits.data() + j * classes;
    float* d = top_delta.data() + j * classes;
    const float max = *std::max_element(z, z + classes);
    float sum = 0.0f;
    for (Eigen::Index k = 0; k < classes; ++k) {
      d[k] = std::exp(z[k] - max);
      sum += d[k];
    }
    const int32_t label = y[j];
    assert(label >= 0 && label < classes);
    loss_sum += std::log(static_cast<double>(sum)) + static_cast<double>(max) - z[label];
    const float scale = inv_n / sum;
    for (Eigen::Index k = 0; k < classes; ++k) d[k] *= scale;
    d[label] -= inv_n;
  }

  // Back through the layers; each gradient lands in `grad` without a copy.
  Eigen::Index out = classes;
  int64_t offset = num_params_;
  for (size_t l = layers; l-- > 0;) {
    const Eigen::Index in = l == 0 ? spec_.input_dim : spec_.hidden[l - 1];
    offset -= out * in + out;
    MatrixMap dw(grad.data() + offset, out, in);
    VectorMap db(grad.data() + offset + out * in, out);
    const Eigen::MatrixXf& delta = deltas_[l];
    if (l == 0) {
      dw.noalias() = delta * x.transpose();
    } else {
      dw.noalias() = delta * activations_[l - 1].transpose();
    }
    db.noalias() = delta.rowwise().sum();
    if (l > 0) {
      ConstMatrixMap w(params.data() + offset, out, in);
      Eigen::MatrixXf& below = deltas_[l - 1];
      below.resize(in, n);
      below.noalias() = w.transpose() * delta;
      // ReLU passes the gradient only where its output was positive.
      below = (activations_[l - 1].array() > 0.0f).select(below, 0.0f);
    }
    out = in;
  }
  return loss_sum / static_cast<double>(n);
}

void Model::Score(std::span<const float> params, const Eigen::MatrixXf& x,
                  std::span<const int32_t> y, double* loss_sum, int64_t* correct) {
  assert(static_cast<int64_t>(params.size()) == num_params_);
  assert(x.rows() == spec_.input_dim);
  assert(x.cols() == static_cast<Eigen::Index>(y.size()));
  Forward(spec_, params, x, &activations_);
  const Eigen::MatrixXf& logits = activations_.back();
  const Eigen::Index n = x.cols();
  const Eigen::Index classes = spec_.classes;
  double loss = 0.0;
  int64_t hits = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    const float* z = logits.data() + j * classes;
    const float* best = std::max_element(z, z + classes);
    const float max = *best;
    float sum = 0.0f;
    for (Eigen::Index k = 0; k < classes; ++k) sum += std::exp(z[k] - max);
    const int32_t label = y[j];
    assert(label >= 0 && label < classes);
    loss += std::log(static_cast<double>(sum)) + static_cast<double>(max) - z[label];
    if (best - z == label) ++hits;
  }
  *loss_sum = loss;
  *correct = hits;
}

EvalResult Model::Evaluate(std::span<const float> params, const data::Dataset& dataset,
                           int64_t batch) {
  EvalResult result;
  const int64_t rows = dataset.rows();
  const int64_t step = std::max<int64_t>(batch, 1);
  std::vector<int64_t> indices;
  indices.reserve(static_cast<size_t>(std::min(step, rows)));
  Eigen::MatrixXf x;
  std::vector<int32_t> y;
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (int64_t first = 0; first < rows; first += step) {
    const int64_t last = std::min(rows, first + step);
    indices.clear();
    for (int64_t i = first; i < last; ++i) indices.push_back(i);
    dataset.Gather(indices, &x, &y);
    double batch_loss = 0.0;
    int64_t batch_correct = 0;
    Score(params, x, y, &batch_loss, &batch_correct);
    loss_sum += batch_loss;
    correct += batch_correct;
  }
  result.samples = rows;
  if (rows > 0) {
    result.accuracy = static_cast<double>(correct) / static_cast<double>(rows);
    result.loss = loss_sum / static_cast<double>(rows);
  }
  return result;
}

}  // namespace dmlps::model
