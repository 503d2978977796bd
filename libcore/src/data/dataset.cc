// Sharding, batching and data-source spellings; the file readers live in
// idx.cc and libsvm.cc.
#include "dmlps/data/dataset.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace dmlps::data {
namespace {

constexpr std::string_view kAcceptedSpellings =
    "fashion-mnist, fashion-mnist:DIR, idx:DIR or libsvm:FILE";

constexpr std::string_view kTrainImages = "train-images-idx3-ubyte.gz";
constexpr std::string_view kTrainLabels = "train-labels-idx1-ubyte.gz";
constexpr std::string_view kTestImages = "t10k-images-idx3-ubyte.gz";
constexpr std::string_view kTestLabels = "t10k-labels-idx1-ubyte.gz";

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string path(dir);
  if (!path.empty() && path.back() != '/') path += '/';
  path += name;
  return path;
}

DataSpec IdxSpec(std::string_view dir, std::string_view text) {
  DataSpec spec;
  spec.format = DataSpec::Format::kIdx;
  spec.train_images = JoinPath(dir, kTrainImages);
  spec.train_labels = JoinPath(dir, kTrainLabels);
  spec.test_images = JoinPath(dir, kTestImages);
  spec.test_labels = JoinPath(dir, kTestLabels);
  spec.text = std::string(text);
  return spec;
}

bool PathExists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

// The ".gz" name when that file exists or neither does (so errors name what
// the spec asked for), otherwise the uncompressed name beside it.
std::string ResolveIdxPath(const std::string& path) {
  constexpr std::string_view kGz = ".gz";
  if (path.size() <= kGz.size() || !path.ends_with(kGz) || PathExists(path)) return path;
  std::string plain = path.substr(0, path.size() - kGz.size());
  return PathExists(plain) ? plain : path;
}

}  // namespace

int64_t MachineMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  // Unknown: a bound no real machine reaches still refuses absurd sizes.
  if (pages <= 0 || page <= 0) return int64_t{1} << 40;
  return static_cast<int64_t>(pages) * static_cast<int64_t>(page);
}

std::pair<int64_t, int64_t> ShardRange(int64_t rows, Shard shard) {
  if (rows <= 0 || shard.count <= 0 || shard.index < 0 || shard.index >= shard.count) {
    return {0, 0};
  }
  const int64_t base = rows / shard.count;
  const int64_t extra = rows % shard.count;  // the first `extra` shards get one more row
  const int64_t first = shard.index * base + std::min(shard.index, extra);
  const int64_t size = base + (shard.index < extra ? 1 : 0);
  return {first, first + size};
}

void Dataset::Gather(std::span<const int64_t> indices, Eigen::MatrixXf* x,
                     std::vector<int32_t>* y) const {
  const auto n = static_cast<Eigen::Index>(indices.size());
  y->resize(indices.size());
  if (sparse()) {
    x->setZero(dim, n);
  } else {
    x->resize(dim, n);
  }
  for (size_t j = 0; j < indices.size(); ++j) {
    const auto row = static_cast<size_t>(indices[j]);
    const auto column = static_cast<Eigen::Index>(j);
    if (sparse()) {
      const auto begin = static_cast<size_t>(row_offsets[row]);
      const auto end = static_cast<size_t>(row_offsets[row + 1]);
      for (size_t k = begin; k < end; ++k) (*x)(cols[k], column) = values[k];
    } else {
      x->col(column) = Eigen::Map<const Eigen::VectorXf>(
          dense.data() + row * static_cast<size_t>(dim), static_cast<Eigen::Index>(dim));
    }
    (*y)[j] = labels[row];
  }
}

Status Dataset::ConformTo(int64_t model_dim, int64_t model_classes) {
  if (model_dim <= 0 || model_classes <= 0) {
    return Status::Config("a model of " + std::to_string(model_dim) + " inputs and " +
                          std::to_string(model_classes) + " classes cannot take any data");
  }
  if (sparse()) {
    if (dim > model_dim) {
      return Status::Config("the data has feature indices up to " + std::to_string(dim) +
                            " but the model takes only " + std::to_string(model_dim) + " inputs");
    }
  } else if (dim != model_dim) {
    return Status::Config("the data has " + std::to_string(dim) +
                          " features per sample but the model takes " + std::to_string(model_dim) +
                          " inputs");
  }
  if (!labels.empty()) {
    const int32_t largest = *std::max_element(labels.begin(), labels.end());
    if (largest >= model_classes) {
      return Status::Config("the data holds class " + std::to_string(largest) +
                            " but the model has only " + std::to_string(model_classes) +
                            " classes [0, " + std::to_string(model_classes - 1) + "]");
    }
  }
  if (sparse()) dim = model_dim;
  classes = model_classes;
  return Status::Ok();
}

Result<DataSpec> ParseDataSpec(std::string_view text) {
  if (text.empty()) {
    return Status::InvalidArgument("no data source given; expected " +
                                   std::string(kAcceptedSpellings));
  }
  if (text == "fashion-mnist") return IdxSpec(kFashionMnistDir, text);

  const size_t colon = text.find(':');
  const std::string_view prefix = text.substr(0, colon);
  if (colon == std::string_view::npos ||
      (prefix != "fashion-mnist" && prefix != "idx" && prefix != "libsvm")) {
    return Status::InvalidArgument("unknown data source '" + std::string(text) + "'; expected " +
                                   std::string(kAcceptedSpellings));
  }
  const std::string_view rest = text.substr(colon + 1);
  if (prefix == "libsvm") {
    if (rest.empty()) {
      return Status::InvalidArgument("data source '" + std::string(text) +
                                     "' names no file; expected libsvm:FILE");
    }
    DataSpec spec;
    spec.format = DataSpec::Format::kLibsvm;
    spec.train_images = std::string(rest);
    spec.test_images = std::string(rest) + ".t";
    spec.text = std::string(text);
    return spec;
  }
  if (rest.empty()) {
    return Status::InvalidArgument("data source '" + std::string(text) +
                                   "' names no directory; expected " + std::string(prefix) +
                                   ":DIR");
  }
  return IdxSpec(rest, text);
}

namespace {

// A missing default data set says which Debian package provides it.
Result<Dataset> WithInstallHint(const DataSpec& spec, Result<Dataset> loaded) {
  if (loaded.ok() || spec.text != "fashion-mnist" ||
      loaded.status().code() != StatusCode::kNotFound) {
    return loaded;
  }
  return Status::NotFound(loaded.status().message() +
                          " (the fashion-mnist data set: apt install dataset-fashion-mnist)");
}

}  // namespace

Result<Dataset> LoadTrain(const DataSpec& spec, Shard shard) {
  if (spec.format == DataSpec::Format::kLibsvm) {
    return ReadLibsvm(spec.train_images, shard, spec.max_features);
  }
  return WithInstallHint(
      spec, ReadIdx(ResolveIdxPath(spec.train_images), ResolveIdxPath(spec.train_labels), shard,
                    spec.max_features));
}

Result<Dataset> LoadTest(const DataSpec& spec) {
  if (spec.format == DataSpec::Format::kLibsvm) {
    return ReadLibsvm(spec.test_images, {}, spec.max_features);
  }
  return WithInstallHint(spec, ReadIdx(ResolveIdxPath(spec.test_images),
                                       ResolveIdxPath(spec.test_labels), {}, spec.max_features));
}

}  // namespace dmlps::data
