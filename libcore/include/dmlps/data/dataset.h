// Labelled datasets held in memory, the files they come from, and sharding.
#ifndef DMLPS_DATA_DATASET_H_
#define DMLPS_DATA_DATASET_H_

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::data {

// Which part of a dataset a worker owns: shard `index` of `count`.
struct Shard {
  int64_t index = 0;
  int64_t count = 1;
};

// Rows [first, second) that `shard` owns out of `rows`: contiguous, disjoint,
// covering every row, sizes differing by at most one. REQUIRES: 0 <= index < count.
std::pair<int64_t, int64_t> ShardRange(int64_t rows, Shard shard);

// Samples with integer class labels in [0, classes). Features are dense
// row-major floats (IDX) or sparse CSR rows (LIBSVM); exactly one is filled.
struct Dataset {
  int64_t dim = 0;      // features per sample
  int64_t classes = 0;  // 1 + the largest label the source declares or holds
  std::vector<int32_t> labels;
  std::vector<float> dense;          // rows() * dim, row-major; empty when sparse
  std::vector<int64_t> row_offsets;  // CSR: rows() + 1 offsets into cols/values
  std::vector<int32_t> cols;         // CSR: 0-based feature indices, increasing per row
  std::vector<float> values;         // CSR: feature values

  int64_t rows() const { return static_cast<int64_t>(labels.size()); }
  bool sparse() const { return !row_offsets.empty(); }

  // Writes the samples at `indices` as the columns of `x` (dim x n, zeros where
  // a sparse row has no entry) and their labels into `y`.
  // REQUIRES: every index in [0, rows()).
  void Gather(std::span<const int64_t> indices, Eigen::MatrixXf* x, std::vector<int32_t>* y) const;

  // Widens this dataset to a model's input size and class count, or says why it
  // cannot: a dense dim must match exactly, a sparse one may be smaller, and
  // every label must be below `classes`.
  Status ConformTo(int64_t model_dim, int64_t model_classes);
};

// The bytes of memory this machine has (physical pages), the bound that
// sizes declared by a data file (and the model they imply) are checked
// against before anything is allocated for them: a tiny file declaring
// billions of features is refused, one line and exit 65, rather than
// ending in an out-of-memory abort.
int64_t MachineMemoryBytes();

// The most features (LIBSVM: the largest index; IDX: pixels per image) a
// data file may declare unless --max-features says otherwise: more than
// the largest public LIBSVM sets, few enough that a sample made dense
// (256 MiB) and a model over them can be held.
inline constexpr int64_t kDefaultMaxFeatures = int64_t{1} << 26;

// Reads IDX image and label files (gzip-compressed or plain; IDX type ubyte),
// scales pixels to [0, 1] and keeps only the rows of `shard`.
// Errors: NotFound for a missing file, DataLoss for a corrupt or truncated one
// or image/label counts that differ, or images of more than `max_features`
// pixels or more floats than this machine's memory holds.
Result<Dataset> ReadIdx(const std::string& images_path, const std::string& labels_path,
                        Shard shard = {}, int64_t max_features = kDefaultMaxFeatures);

// Reads a LIBSVM text file ("label index:value ..." per line, 1-based increasing
// indices, '#' comments) and keeps the rows of `shard`. A label of -1 becomes
// class 0; other labels must be non-negative integers. dim is the largest
// index seen in the whole file, which must not pass `max_features`. Errors
// name the file and line.
Result<Dataset> ReadLibsvm(const std::string& path, Shard shard = {},
                           int64_t max_features = kDefaultMaxFeatures);

// Where a job's data lives. Spellings:
//   fashion-mnist        Debian's dataset-fashion-mnist in kFashionMnistDir
//   fashion-mnist:DIR    the same four IDX files in DIR
//   idx:DIR              likewise (train-images-idx3-ubyte[.gz], ...)
//   libsvm:FILE          LIBSVM text; its test set is FILE.t
struct DataSpec {
  enum class Format { kIdx, kLibsvm };
  Format format = Format::kIdx;
  std::string train_images;  // IDX; for LIBSVM the training file
  std::string train_labels;  // IDX only
  std::string test_images;   // IDX; for LIBSVM the test file
  std::string test_labels;   // IDX only
  std::string text;          // the spelling it was parsed from
  // The most features its files may declare (--max-features); ParseDataSpec
  // leaves the default.
  int64_t max_features = kDefaultMaxFeatures;
};

inline constexpr std::string_view kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Parses a spelling above; InvalidArgument names what was wrong. Checks no file.
Result<DataSpec> ParseDataSpec(std::string_view text);

// Loads the training rows of `shard`, or the whole test set.
Result<Dataset> LoadTrain(const DataSpec& spec, Shard shard);
Result<Dataset> LoadTest(const DataSpec& spec);

}  // namespace dmlps::data

#endif  // DMLPS_DATA_DATASET_H_
