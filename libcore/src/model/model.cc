#include "dmlps/model/model.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <random>
#include <system_error>
#include <utility>

#include "model/cnn.h"

namespace dmlps::model {
namespace {

constexpr int64_t kMaxWidth = 65536;
constexpr int64_t kMaxChannels = 1024;

using ConstMatrixMap = Eigen::Map<const Eigen::MatrixXf>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXf>;
using MatrixMap = Eigen::Map<Eigen::MatrixXf>;
using VectorMap = Eigen::Map<Eigen::VectorXf>;

// Parses one hidden width (or channel count) of `text`, or says why it is not one.
Result<int64_t> ParseWidth(std::string_view entry, std::string_view text,
                           std::string_view what = "hidden layer width", int64_t max = kMaxWidth) {
  std::string context = "model \"" + std::string(text) + "\"";
  if (entry.empty()) {
    return Status::InvalidArgument(context + ": empty " + std::string(what));
  }
  int64_t width = 0;
  const char* first = entry.data();
  const char* last = entry.data() + entry.size();
  auto [ptr, ec] = std::from_chars(first, last, width);
  if (ec == std::errc::result_out_of_range) {
    return Status::InvalidArgument(context + ": " + std::string(what) + " \"" + std::string(entry) +
                                   "\" is outside [1, " + std::to_string(max) + "]");
  }
  if (ec != std::errc() || ptr != last) {
    return Status::InvalidArgument(context + ": " + std::string(what) + " \"" + std::string(entry) +
                                   "\" is not a whole number");
  }
  if (width < 1 || width > max) {
    return Status::InvalidArgument(context + ": " + std::string(what) + " " +
                                   std::to_string(width) + " is outside [1, " +
                                   std::to_string(max) + "]");
  }
  return width;
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

// The convolutional network's scratch, behind the public header's pointer.
class CnnScratch {
 public:
  explicit CnnScratch(const ModelSpec& spec) : core(spec) {}
  CnnCore<float> core;
};

std::string ModelSpec::Name() const {
  if (is_cnn()) {
    std::string name = "cnn:";
    name += std::to_string(conv[0]);
    for (size_t i = 1; i < conv.size(); ++i) {
      name += ',';
      name += std::to_string(conv[i]);
    }
    for (int64_t width : hidden) {
      name += ',';
      name += std::to_string(width);
    }
    return name;
  }
  if (hidden.empty()) return "softmax";
  std::string name = "mlp:";
  for (size_t i = 0; i < hidden.size(); ++i) {
    if (i > 0) name += ',';
    name += std::to_string(hidden[i]);
  }
  return name;
}

std::vector<std::pair<int64_t, int64_t>> ModelSpec::LayerShapes() const {
  std::vector<std::pair<int64_t, int64_t>> shapes;
  int64_t in = input_dim;
  if (is_cnn()) {
    shapes.emplace_back(conv[0], 9);
    shapes.emplace_back(conv[1], 9 * conv[0]);
    in = conv[1] * (image_side / 4) * (image_side / 4);
  }
  for (int64_t width : hidden) {
    shapes.emplace_back(width, in);
    in = width;
  }
  shapes.emplace_back(classes, in);
  return shapes;
}

int64_t ModelSpec::NumParams() const {
  int64_t total = 0;
  for (const auto& [out, in] : LayerShapes()) total += out * in + out;
  return total;
}

int64_t ModelSpec::ScratchFloatsPerSample() const {
  int64_t floats = input_dim;
  std::vector<std::pair<int64_t, int64_t>> shapes = LayerShapes();
  size_t first_dense = 0;
  if (is_cnn()) {
    const int64_t p1 = image_side * image_side;
    const int64_t p2 = p1 / 4;
    const int64_t p3 = p2 / 4;
    // Columns, activations, pooled maps and window indices (a quarter float
    // each), each with its gradient where the backward pass keeps one.
    floats += 9 * p1 + 2 * conv[0] * p1 + 2 * conv[0] * p2 + conv[0] * p2 / 4;
    floats += 2 * 9 * conv[0] * p2 + 2 * conv[1] * p2 + 2 * conv[1] * p3 + conv[1] * p3 / 4;
    floats += p1;  // ones to sum bias gradients over every pixel (the GPU's)
    first_dense = 2;
  }
  for (size_t l = first_dense; l < shapes.size(); ++l) floats += 2 * shapes[l].first;
  return floats + 3;  // labels, per-sample losses (double), a one
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
  constexpr std::string_view kCnnPrefix = "cnn:";
  constexpr std::string_view kCnnDefault = "16,32,128";
  if (text == "softmax") {
    // Softmax regression: no hidden layer.
  } else if (text.starts_with(kMlpPrefix)) {
    std::string_view rest = text.substr(kMlpPrefix.size());
    if (rest.empty()) {
      return Status::InvalidArgument(context +
                                     ": mlp needs at least one hidden layer width, "
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
  } else if (text == "cnn" || text.starts_with(kCnnPrefix)) {
    std::string_view rest =
        text == "cnn" ? std::string_view(kCnnDefault) : text.substr(kCnnPrefix.size());
    std::vector<int64_t> numbers;
    while (true) {
      size_t comma = rest.find(',');
      std::string_view entry = rest.substr(0, comma);
      const bool channels = numbers.size() < 2;
      DMLPS_ASSIGN_OR_RETURN(
          int64_t number, ParseWidth(entry, text, channels ? "channel count" : "hidden layer width",
                                     channels ? kMaxChannels : kMaxWidth));
      numbers.push_back(number);
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
    if (numbers.size() < 2) {
      return Status::InvalidArgument(context +
                                     ": cnn needs the channels of both convolutions, "
                                     "as in cnn:16,32 or cnn:16,32,128");
    }
    const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(input_dim))));
    if (side * side != input_dim || side % 4 != 0) {
      return Status::InvalidArgument(context +
                                     ": cnn needs square images whose side is a "
                                     "multiple of 4, but the input has " +
                                     std::to_string(input_dim) + " values");
    }
    spec.conv.assign(numbers.begin(), numbers.begin() + 2);
    spec.hidden.assign(numbers.begin() + 2, numbers.end());
    spec.image_side = side;
  } else {
    return Status::InvalidArgument(context +
                                   ": unknown model; expected softmax, mlp:H1[,H2...] "
                                   "or cnn[:C1,C2[,H...]]");
  }
  // The count must fit an int64_t, with room for byte offsets into the vector.
  double approx = 0;
  for (const auto& [out, in] : spec.LayerShapes()) {
    approx += static_cast<double>(out) * static_cast<double>(in) + static_cast<double>(out);
  }
  if (approx > 0x1.0p60) {
    return Status::InvalidArgument(context + ": too many parameters for input size " +
                                   std::to_string(input_dim) + " and " + std::to_string(classes) +
                                   " classes");
  }
  // A server holds the model, its optimizer's state, the sum of the pushes
  // and a copy for replies: a model whose copies cannot fit in memory comes
  // from data declaring absurd sizes, refused before anything is allocated.
  constexpr double kCopies = 4;
  const double need = approx * sizeof(float) * kCopies;
  const auto memory = static_cast<double>(data::MachineMemoryBytes());
  if (need > memory) {
    return Status::DataLoss(context + ": input size " + std::to_string(input_dim) + " and " +
                            std::to_string(classes) + " classes need " +
                            std::to_string(static_cast<int64_t>(approx)) + " parameters, " +
                            std::to_string(static_cast<int64_t>(need / (1 << 20))) +
                            " MiB for the copies a server keeps, more than this machine's " +
                            std::to_string(static_cast<int64_t>(memory / (1 << 20))) + " MiB");
  }
  return spec;
}

Model::Model(ModelSpec spec) : spec_(std::move(spec)) {
  num_params_ = spec_.NumParams();
  if (spec_.is_cnn()) {
    cnn_ = std::make_unique<CnnScratch>(spec_);
  } else {
    activations_.resize(spec_.hidden.size() + 1);
    deltas_.resize(spec_.hidden.size() + 1);
  }
}

Model::Model(const Model& other) : Model(other.spec_) {}

Model& Model::operator=(const Model& other) {
  if (this != &other) *this = Model(other.spec_);
  return *this;
}

Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

void Model::Initialize(uint64_t seed, std::span<float> params) const {
  assert(static_cast<int64_t>(params.size()) == num_params_);
  std::mt19937_64 engine(seed);
  int64_t offset = 0;
  for (const auto& [out, in] : spec_.LayerShapes()) {
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
  if (cnn_ != nullptr) return cnn_->core.LossAndGradient(params, x.data(), x.cols(), y, grad);
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
  if (cnn_ != nullptr) {
    cnn_->core.Score(params, x.data(), x.cols(), y, loss_sum, correct);
    return;
  }
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
