// Tests for datasets: IDX and LIBSVM readers, sharding, batching, data specs.
#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "dmlps/data/dataset.h"
#include "test_util.h"

namespace dmlps::data {
namespace {

using testing::TempDir;

using Bytes = std::vector<uint8_t>;

void WritePlain(const std::string& path, const Bytes& bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  if (!bytes.empty()) REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size());
  REQUIRE(std::fclose(file) == 0);
}

void WriteGzip(const std::string& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  if (!bytes.empty()) {
    REQUIRE(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) ==
            static_cast<int>(bytes.size()));
  }
  REQUIRE(gzclose(file) == Z_OK);
}

void WriteText(const std::string& path, const std::string& text) {
  WritePlain(path, Bytes(text.begin(), text.end()));
}

void PutBigEndian32(uint32_t value, Bytes* out) {
  out->push_back(static_cast<uint8_t>(value >> 24));
  out->push_back(static_cast<uint8_t>(value >> 16));
  out->push_back(static_cast<uint8_t>(value >> 8));
  out->push_back(static_cast<uint8_t>(value));
}

// An IDX file of element type `type` with the given sizes and payload.
Bytes Idx(uint8_t type, const std::vector<uint32_t>& sizes, const Bytes& payload) {
  Bytes out = {0, 0, type, static_cast<uint8_t>(sizes.size())};
  for (uint32_t size : sizes) PutBigEndian32(size, &out);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

uint8_t PixelAt(uint64_t i) { return static_cast<uint8_t>((i * 37 + 11) % 256); }
int32_t LabelAt(uint64_t row, int classes) {
  return static_cast<int32_t>((row * 7 + 3) % static_cast<uint64_t>(classes));
}

Bytes ImagesPayload(uint32_t count, uint32_t rows, uint32_t cols) {
  Bytes payload(static_cast<size_t>(count) * rows * cols);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = PixelAt(i);
  return payload;
}

Bytes LabelsPayload(uint32_t count, int classes) {
  Bytes payload(count);
  for (uint32_t i = 0; i < count; ++i) payload[i] = static_cast<uint8_t>(LabelAt(i, classes));
  return payload;
}

// Writes a consistent pair of IDX files and returns their paths.
std::pair<std::string, std::string> WriteIdxPair(const TempDir& dir, const std::string& stem,
                                                 uint32_t count, uint32_t rows, uint32_t cols,
                                                 int classes, bool gzip) {
  const std::string images = dir.File(stem + "-images");
  const std::string labels = dir.File(stem + "-labels");
  const Bytes image_bytes = Idx(0x08, {count, rows, cols}, ImagesPayload(count, rows, cols));
  const Bytes label_bytes = Idx(0x08, {count}, LabelsPayload(count, classes));
  if (gzip) {
    WriteGzip(images, image_bytes);
    WriteGzip(labels, label_bytes);
  } else {
    WritePlain(images, image_bytes);
    WritePlain(labels, label_bytes);
  }
  return {images, labels};
}

// Checks that `data` holds rows [first, last) of what WriteIdxPair wrote.
void CheckIdxRows(const Dataset& data, int64_t first, int64_t last, int64_t dim, int classes) {
  REQUIRE(data.rows() == last - first);
  REQUIRE(data.dim == dim);
  REQUIRE_FALSE(data.sparse());
  REQUIRE(data.dense.size() == static_cast<size_t>((last - first) * dim));
  int64_t wrong_pixels = 0;
  int64_t wrong_labels = 0;
  for (int64_t r = first; r < last; ++r) {
    if (data.labels[static_cast<size_t>(r - first)] != LabelAt(static_cast<uint64_t>(r), classes)) {
      ++wrong_labels;
    }
    for (int64_t k = 0; k < dim; ++k) {
      const uint8_t byte = PixelAt(static_cast<uint64_t>(r * dim + k));
      const float expected = static_cast<float>(byte) / 255.0f;
      if (data.dense[static_cast<size_t>((r - first) * dim + k)] != expected) ++wrong_pixels;
    }
  }
  CHECK(wrong_labels == 0);
  CHECK(wrong_pixels == 0);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Fails unless `result` is an error of `code` whose message holds every one
// of `parts`.
template <typename T>
void CheckRefused(const Result<T>& result, StatusCode code,
                  std::initializer_list<std::string> parts = {}) {
  REQUIRE_FALSE(result.ok());
  CHECK(result.status().code() == code);
  for (const std::string& part : parts) {
    CHECK_MESSAGE(Contains(result.status().message(), part), result.status().message());
  }
}

}  // namespace

TEST_CASE("ShardRange splits rows into contiguous, disjoint, covering, balanced parts") {
  std::vector<int64_t> row_counts;
  for (int64_t rows = 0; rows <= 40; ++rows) row_counts.push_back(rows);
  for (int64_t rows : {59999, 60000, 60001, 1000003}) row_counts.push_back(rows);
  for (int64_t rows : row_counts) {
    for (int64_t count = 1; count <= 17; ++count) {
      CAPTURE(rows);
      CAPTURE(count);
      int64_t next = 0;
      int64_t smallest = rows + 1;
      int64_t largest = -1;
      for (int64_t index = 0; index < count; ++index) {
        const auto [first, last] = ShardRange(rows, Shard{index, count});
        REQUIRE(first == next);  // contiguous and disjoint, in order
        REQUIRE(last >= first);
        smallest = std::min(smallest, last - first);
        largest = std::max(largest, last - first);
        next = last;
      }
      CHECK(next == rows);  // covers every row
      CHECK(largest - smallest <= 1);
    }
  }
  CHECK(ShardRange(10, Shard{}) == std::pair<int64_t, int64_t>{0, 10});
  CHECK(ShardRange(60000, Shard{1, 4}) == std::pair<int64_t, int64_t>{15000, 30000});
  CHECK(ShardRange(10, Shard{0, 3}) == std::pair<int64_t, int64_t>{0, 4});
  CHECK(ShardRange(10, Shard{2, 3}) == std::pair<int64_t, int64_t>{7, 10});
}

TEST_CASE("ReadIdx reads gzip and plain files and keeps the rows of a shard") {
  TempDir dir;
  for (bool gzip : {true, false}) {
    CAPTURE(gzip);
    const auto [images, labels] = WriteIdxPair(dir, gzip ? "gz" : "plain", 7, 2, 3, 3, gzip);
    Result<Dataset> full = ReadIdx(images, labels);
    REQUIRE_MESSAGE(full.ok(), full.status().ToString());
    CHECK(full->classes == 3);
    CheckIdxRows(*full, 0, 7, 6, 3);
    CHECK(full->dense[0] == static_cast<float>(PixelAt(0)) / 255.0f);

    std::vector<int32_t> joined_labels;
    std::vector<float> joined_pixels;
    for (int64_t index = 0; index < 3; ++index) {
      Result<Dataset> part = ReadIdx(images, labels, Shard{index, 3});
      REQUIRE_MESSAGE(part.ok(), part.status().ToString());
      const auto [first, last] = ShardRange(7, Shard{index, 3});
      CheckIdxRows(*part, first, last, 6, 3);
      CHECK(part->classes == 3);  // from the whole file, not just the shard
      joined_labels.insert(joined_labels.end(), part->labels.begin(), part->labels.end());
      joined_pixels.insert(joined_pixels.end(), part->dense.begin(), part->dense.end());
    }
    CHECK(joined_labels == full->labels);
    CHECK(joined_pixels == full->dense);
  }
}

TEST_CASE("ReadIdx handles shards that straddle its read blocks") {
  TempDir dir;
  // 3000 images of 28 x 28 are 2.35 MB, more than two 1 MiB read blocks.
  const auto [images, labels] = WriteIdxPair(dir, "big", 3000, 28, 28, 10, true);
  for (int64_t index = 0; index < 3; ++index) {
    Result<Dataset> part = ReadIdx(images, labels, Shard{index, 3});
    REQUIRE_MESSAGE(part.ok(), part.status().ToString());
    CheckIdxRows(*part, index * 1000, (index + 1) * 1000, 784, 10);
    CHECK(part->classes == 10);
  }
  Result<Dataset> many = ReadIdx(images, labels, Shard{6, 7});
  REQUIRE(many.ok());
  const auto [first, last] = ShardRange(3000, Shard{6, 7});
  CheckIdxRows(*many, first, last, 784, 10);
}

TEST_CASE("ReadIdx accepts an empty set and more shards than rows") {
  TempDir dir;
  const auto [images, labels] = WriteIdxPair(dir, "tiny", 2, 4, 4, 2, true);
  Result<Dataset> empty_shard = ReadIdx(images, labels, Shard{4, 5});
  REQUIRE(empty_shard.ok());
  CHECK(empty_shard->rows() == 0);
  CHECK(empty_shard->dim == 16);
  CHECK(empty_shard->dense.empty());

  const auto [no_images, no_labels] = WriteIdxPair(dir, "none", 0, 28, 28, 10, false);
  Result<Dataset> none = ReadIdx(no_images, no_labels);
  REQUIRE(none.ok());
  CHECK(none->rows() == 0);
  CHECK(none->dim == 784);
}

TEST_CASE("ReadIdx reports corrupt, truncated and missing files") {
  TempDir dir;
  const std::string good_images = dir.File("good-images");
  const std::string good_labels = dir.File("good-labels");
  WriteGzip(good_images, Idx(0x08, {4, 2, 2}, ImagesPayload(4, 2, 2)));
  WriteGzip(good_labels, Idx(0x08, {4}, LabelsPayload(4, 10)));
  REQUIRE(ReadIdx(good_images, good_labels).ok());

  SUBCASE("bad magic") {
    const std::string path = dir.File("bad-magic");
    Bytes bytes = Idx(0x08, {4, 2, 2}, ImagesPayload(4, 2, 2));
    bytes[0] = 0x1F;
    bytes[1] = 0x8C;
    WritePlain(path, bytes);
    CheckRefused(ReadIdx(path, good_labels), StatusCode::kDataLoss, {path, "magic"});
  }
  SUBCASE("element type other than unsigned byte") {
    const std::string path = dir.File("float-images");
    WriteGzip(path, Idx(0x0D, {4, 2, 2}, Bytes(64, 0)));
    CheckRefused(ReadIdx(path, good_labels), StatusCode::kDataLoss, {"0x0D", "unsigned byte"});
  }
  SUBCASE("images and labels swapped") {
    CheckRefused(ReadIdx(good_labels, good_images), StatusCode::kDataLoss, {"dimensions"});
  }
  SUBCASE("zero-sized images") {
    const std::string path = dir.File("flat-images");
    WriteGzip(path, Idx(0x08, {4, 0, 2}, {}));
    CheckRefused(ReadIdx(path, good_labels), StatusCode::kDataLoss);
  }
  SUBCASE("truncated header") {
    const std::string path = dir.File("short-header");
    Bytes bytes = Idx(0x08, {4, 2, 2}, {});
    bytes.resize(9);
    WriteGzip(path, bytes);
    CheckRefused(ReadIdx(path, good_labels), StatusCode::kDataLoss, {"header"});

    const std::string empty = dir.File("empty");
    WritePlain(empty, {});
    CheckRefused(ReadIdx(empty, good_labels), StatusCode::kDataLoss);
  }
  SUBCASE("truncated images") {
    const std::string path = dir.File("short-images");
    Bytes payload = ImagesPayload(4, 2, 2);
    payload.resize(10);  // two whole images and part of a third
    WriteGzip(path, Idx(0x08, {4, 2, 2}, payload));
    for (int64_t index = 0; index < 4; ++index) {  // every shard sees it
      CheckRefused(ReadIdx(path, good_labels, Shard{index, 4}), StatusCode::kDataLoss,
                   {path, "truncated", "2 whole images"});
    }
  }
  SUBCASE("truncated labels") {
    const std::string path = dir.File("short-labels");
    WritePlain(path, Idx(0x08, {4}, LabelsPayload(3, 10)));
    CheckRefused(ReadIdx(good_images, path), StatusCode::kDataLoss, {path, "only 3"});
  }
  SUBCASE("truncated gzip stream") {
    const std::string whole = dir.File("whole.gz");
    WriteGzip(whole, Idx(0x08, {64, 28, 28}, ImagesPayload(64, 28, 28)));
    std::FILE* in = std::fopen(whole.c_str(), "rb");
    REQUIRE(in != nullptr);
    Bytes compressed(1 << 20);
    compressed.resize(std::fread(compressed.data(), 1, compressed.size(), in));
    std::fclose(in);
    compressed.resize(compressed.size() / 2);
    const std::string path = dir.File("cut.gz");
    WritePlain(path, compressed);
    const std::string labels = dir.File("labels64");
    WritePlain(labels, Idx(0x08, {64}, LabelsPayload(64, 10)));
    CheckRefused(ReadIdx(path, labels), StatusCode::kDataLoss, {path});
  }
  SUBCASE("a damaged gzip checksum") {
    const std::string whole = dir.File("whole.gz");
    WriteGzip(whole, Idx(0x08, {4, 2, 2}, ImagesPayload(4, 2, 2)));
    std::FILE* in = std::fopen(whole.c_str(), "rb");
    REQUIRE(in != nullptr);
    Bytes compressed(4096);
    compressed.resize(std::fread(compressed.data(), 1, compressed.size(), in));
    std::fclose(in);
    REQUIRE(compressed.size() > 8);
    compressed[compressed.size() - 8] ^= 0x5A;  // the CRC-32 after the deflate data
    const std::string path = dir.File("bad-crc.gz");
    WritePlain(path, compressed);
    Result<Dataset> data = ReadIdx(path, good_labels);
    CheckRefused(data, StatusCode::kDataLoss, {path + ": corrupt gzip data: "});
    CHECK_FALSE(Contains(data.status().message(), "<fd:"));
  }
  SUBCASE("more data than the header promises") {
    const std::string images = dir.File("long-images");
    WriteGzip(images, Idx(0x08, {4, 2, 2}, ImagesPayload(5, 2, 2)));
    CheckRefused(ReadIdx(images, good_labels), StatusCode::kDataLoss, {"more data"});

    const std::string labels = dir.File("long-labels");
    WritePlain(labels, Idx(0x08, {4}, LabelsPayload(6, 10)));
    CheckRefused(ReadIdx(good_images, labels), StatusCode::kDataLoss, {labels});
  }
  SUBCASE("counts that differ") {
    const std::string path = dir.File("five-labels");
    WriteGzip(path, Idx(0x08, {5}, LabelsPayload(5, 10)));
    CheckRefused(ReadIdx(good_images, path), StatusCode::kDataLoss, {"4 images", "5 labels"});
  }
  SUBCASE("missing files") {
    const std::string missing = dir.File("no-such-file.gz");
    Result<Dataset> images = ReadIdx(missing, good_labels);
    CheckRefused(images, StatusCode::kNotFound);
    CHECK(images.status().message() == missing + ": No such file or directory");
    CheckRefused(ReadIdx(good_images, missing), StatusCode::kNotFound);
  }
  SUBCASE("a directory is unreadable, not missing") {
    CheckRefused(ReadIdx(dir.path(), good_labels), StatusCode::kIOError);
  }
  SUBCASE("a shard that does not exist") {
    CheckRefused(ReadIdx(good_images, good_labels, Shard{4, 4}), StatusCode::kInvalidArgument);
  }
}

TEST_CASE("ReadLibsvm parses labels, features, comments and blank lines into CSR") {
  TempDir dir;
  const std::string path = dir.File("train.svm");
  WriteText(path,
            "# a comment line\n"
            "1 1:0.5 3:-2   # a trailing comment\n"
            "-1 2:1e-3\n"
            "\n"
            "   \t\n"
            "+1 4:7\r\n"
            "2.0 1:1 2:+2\n"
            "0\n");
  Result<Dataset> data = ReadLibsvm(path);
  REQUIRE_MESSAGE(data.ok(), data.status().ToString());
  CHECK(data->sparse());
  CHECK(data->dense.empty());
  CHECK(data->rows() == 5);
  CHECK(data->dim == 4);
  CHECK(data->classes == 3);
  CHECK(data->labels == std::vector<int32_t>{1, 0, 1, 2, 0});
  CHECK(data->row_offsets == std::vector<int64_t>{0, 2, 3, 4, 6, 6});
  CHECK(data->cols == std::vector<int32_t>{0, 2, 1, 3, 0, 1});
  CHECK(data->values == std::vector<float>{0.5f, -2.0f, 1e-3f, 7.0f, 1.0f, 2.0f});

  SUBCASE("shards keep their rows but the whole file's dim and classes") {
    Result<Dataset> tail = ReadLibsvm(path, Shard{1, 2});
    REQUIRE(tail.ok());
    CHECK(tail->rows() == 2);
    CHECK(tail->dim == 4);
    CHECK(tail->classes == 3);
    CHECK(tail->labels == std::vector<int32_t>{2, 0});
    CHECK(tail->row_offsets == std::vector<int64_t>{0, 2, 2});
    CHECK(tail->cols == std::vector<int32_t>{0, 1});
    CHECK(tail->values == std::vector<float>{1.0f, 2.0f});

    Result<Dataset> head = ReadLibsvm(path, Shard{0, 2});
    REQUIRE(head.ok());
    CHECK(head->labels == std::vector<int32_t>{1, 0, 1});
    CHECK(head->row_offsets == std::vector<int64_t>{0, 2, 3, 4});
    CHECK(head->cols == std::vector<int32_t>{0, 2, 1, 3});

    Result<Dataset> middle = ReadLibsvm(path, Shard{2, 5});
    REQUIRE(middle.ok());
    CHECK(middle->labels == std::vector<int32_t>{1});
    CHECK(middle->row_offsets == std::vector<int64_t>{0, 1});
    CHECK(middle->cols == std::vector<int32_t>{3});
    CHECK(middle->values == std::vector<float>{7.0f});
  }
}

TEST_CASE("ReadLibsvm accepts an empty file and one without a final newline") {
  TempDir dir;
  const std::string empty = dir.File("empty.svm");
  WriteText(empty, "# nothing here\n\n");
  Result<Dataset> none = ReadLibsvm(empty);
  REQUIRE(none.ok());
  CHECK(none->rows() == 0);
  CHECK(none->sparse());
  CHECK(none->dim == 0);

  const std::string unterminated = dir.File("unterminated.svm");
  WriteText(unterminated, "3 10:1.5");
  Result<Dataset> one = ReadLibsvm(unterminated);
  REQUIRE(one.ok());
  CHECK(one->rows() == 1);
  CHECK(one->dim == 10);
  CHECK(one->classes == 4);
  CHECK(one->cols == std::vector<int32_t>{9});
}

TEST_CASE("ReadLibsvm names the file and line of bad input") {
  TempDir dir;
  struct Case {
    std::string line;
    std::string expect;  // part of the message
  };
  const std::vector<Case> cases = {
      {"1 abc", "expected INDEX:VALUE"},
      {"1 0:1", "feature index 0"},
      {"1 3:1 2:1", "does not increase"},
      {"1 2:1 2:1", "does not increase"},
      {"1 1:nan", "not finite"},
      {"1 1:inf", "not finite"},
      {"1 1:-INF", "not finite"},
      {"1 1:", "bad feature value"},
      {"1 1:0.5x", "bad feature value"},
      {"1 a:1", "bad feature index"},
      {"1 -3:1", "feature index -3"},
      {"1 1:1e999", "out of range"},
      {"1 1:1e300", "too large for a float"},
      {"1:0.5 2:1", "missing label"},
      {"1.5 1:1", "not an integer"},
      {"one 1:1", "not an integer"},
      {"nan 1:1", "not an integer"},
      {"+-1 1:1", "not an integer"},
      {"-2 1:1", "negative"},
      {"3000000000 1:1", "too large"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.line);
    const std::string path = dir.File("bad.svm");
    WriteText(path, "# header\n0 1:1\n" + c.line + "\n1 1:1\n");
    Result<Dataset> data = ReadLibsvm(path);
    CheckRefused(data, StatusCode::kDataLoss);
    CHECK(data.status().message().rfind(path + ":3: ", 0) == 0);
    CHECK_MESSAGE(Contains(data.status().message(), c.expect), data.status().message());
  }

  const std::string binary = dir.File("binary.svm");
  WriteText(binary, "1 1:1\n\x1f\x8b\x08 2:1\n");
  Result<Dataset> garbage = ReadLibsvm(binary);
  REQUIRE_FALSE(garbage.ok());
  CHECK(garbage.status().message() == binary + ":2: label '\\x1F\\x8B\\x08' is not an integer");

  const std::string missing = dir.File("missing.svm");
  Result<Dataset> none = ReadLibsvm(missing);
  CheckRefused(none, StatusCode::kNotFound);
  CHECK(none.status().message() == missing + ": No such file or directory");

  CheckRefused(ReadLibsvm(dir.path()), StatusCode::kIOError);

  CheckRefused(ReadLibsvm(missing, Shard{-1, 2}), StatusCode::kInvalidArgument);
}

TEST_CASE("Gather writes dense rows as columns") {
  Dataset data;
  data.dim = 3;
  data.classes = 4;
  data.labels = {0, 1, 2, 3};
  data.dense = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32};
  const std::vector<int64_t> indices = {2, 0, 2, 3};
  Eigen::MatrixXf x = Eigen::MatrixXf::Constant(5, 7, 99.0f);
  std::vector<int32_t> y = {42};
  data.Gather(indices, &x, &y);
  REQUIRE(x.rows() == 3);
  REQUIRE(x.cols() == 4);
  Eigen::MatrixXf expected(3, 4);
  expected << 20, 0, 20, 30,  //
      21, 1, 21, 31,          //
      22, 2, 22, 32;
  CHECK(x == expected);
  CHECK(y == std::vector<int32_t>{2, 0, 2, 3});

  data.Gather({}, &x, &y);
  CHECK(x.cols() == 0);
  CHECK(y.empty());
}

TEST_CASE("Gather writes sparse rows as columns with zeros elsewhere") {
  Dataset data;
  data.dim = 4;
  data.classes = 2;
  data.labels = {1, 0, 1};
  data.row_offsets = {0, 2, 2, 3};
  data.cols = {0, 3, 2};
  data.values = {1.5f, -2.0f, 7.0f};
  REQUIRE(data.sparse());
  const std::vector<int64_t> indices = {2, 1, 0};
  Eigen::MatrixXf x = Eigen::MatrixXf::Constant(4, 3, 99.0f);
  std::vector<int32_t> y;
  data.Gather(indices, &x, &y);
  Eigen::MatrixXf expected = Eigen::MatrixXf::Zero(4, 3);
  expected(2, 0) = 7.0f;
  expected(0, 2) = 1.5f;
  expected(3, 2) = -2.0f;
  CHECK(x == expected);
  CHECK(y == std::vector<int32_t>{1, 0, 1});
}

TEST_CASE("ConformTo matches a dataset to a model or says why not") {
  Dataset dense;
  dense.dim = 784;
  dense.classes = 3;
  dense.labels = {0, 2, 1};
  dense.dense.assign(3 * 784, 0.5f);

  Status wrong_dim = dense.ConformTo(785, 10);
  CHECK(wrong_dim.code() == StatusCode::kConfig);
  CHECK(Contains(wrong_dim.message(), "784"));
  CHECK(Contains(wrong_dim.message(), "785"));
  CHECK(dense.classes == 3);

  Status few_classes = dense.ConformTo(784, 2);
  CHECK(few_classes.code() == StatusCode::kConfig);
  CHECK(Contains(few_classes.message(), "class 2"));
  CHECK(dense.classes == 3);

  CHECK(dense.ConformTo(784, 10).ok());
  CHECK(dense.dim == 784);
  CHECK(dense.classes == 10);

  Dataset sparse;
  sparse.dim = 5;
  sparse.classes = 2;
  sparse.labels = {1, 0};
  sparse.row_offsets = {0, 1, 2};
  sparse.cols = {4, 0};
  sparse.values = {1.0f, 1.0f};

  Status too_wide = sparse.ConformTo(4, 2);
  CHECK(too_wide.code() == StatusCode::kConfig);
  CHECK(Contains(too_wide.message(), "5"));
  CHECK(Contains(too_wide.message(), "4"));
  CHECK(sparse.dim == 5);

  CHECK(sparse.ConformTo(5, 2).ok());
  CHECK(sparse.dim == 5);
  CHECK(sparse.ConformTo(100, 7).ok());
  CHECK(sparse.dim == 100);
  CHECK(sparse.classes == 7);
  CHECK(sparse.ConformTo(100, 1).code() == StatusCode::kConfig);
  CHECK(sparse.ConformTo(0, 7).code() == StatusCode::kConfig);
}

TEST_CASE("ParseDataSpec accepts the documented spellings") {
  Result<DataSpec> fashion = ParseDataSpec("fashion-mnist");
  REQUIRE(fashion.ok());
  CHECK(fashion->format == DataSpec::Format::kIdx);
  CHECK(fashion->text == "fashion-mnist");
  const std::string base(kFashionMnistDir);
  CHECK(fashion->train_images == base + "/train-images-idx3-ubyte.gz");
  CHECK(fashion->train_labels == base + "/train-labels-idx1-ubyte.gz");
  CHECK(fashion->test_images == base + "/t10k-images-idx3-ubyte.gz");
  CHECK(fashion->test_labels == base + "/t10k-labels-idx1-ubyte.gz");

  Result<DataSpec> in_dir = ParseDataSpec("fashion-mnist:/data/fm");
  REQUIRE(in_dir.ok());
  CHECK(in_dir->format == DataSpec::Format::kIdx);
  CHECK(in_dir->train_images == "/data/fm/train-images-idx3-ubyte.gz");
  CHECK(in_dir->test_labels == "/data/fm/t10k-labels-idx1-ubyte.gz");

  Result<DataSpec> idx = ParseDataSpec("idx:mnist/");
  REQUIRE(idx.ok());
  CHECK(idx->text == "idx:mnist/");
  CHECK(idx->train_labels == "mnist/train-labels-idx1-ubyte.gz");
  CHECK(idx->test_images == "mnist/t10k-images-idx3-ubyte.gz");

  Result<DataSpec> libsvm = ParseDataSpec("libsvm:data/a9a");
  REQUIRE(libsvm.ok());
  CHECK(libsvm->format == DataSpec::Format::kLibsvm);
  CHECK(libsvm->train_images == "data/a9a");
  CHECK(libsvm->test_images == "data/a9a.t");
  CHECK(libsvm->train_labels.empty());
  CHECK(libsvm->test_labels.empty());

  Result<DataSpec> colon_in_path = ParseDataSpec("libsvm:c:/x");
  REQUIRE(colon_in_path.ok());
  CHECK(colon_in_path->train_images == "c:/x");
}

TEST_CASE("ParseDataSpec rejects other spellings") {
  for (const char* text : {"", "mnist", "fashion-mnistx", "FASHION-MNIST", "csv:x.csv",
                           "fashion-mnist:", "idx:", "libsvm:", ":dir", "libsvm"}) {
    CAPTURE(text);
    CheckRefused(ParseDataSpec(text), StatusCode::kInvalidArgument);
  }
  Result<DataSpec> unknown = ParseDataSpec("mnist");
  REQUIRE_FALSE(unknown.ok());
  CHECK(Contains(unknown.status().message(), "'mnist'"));
  CHECK(Contains(unknown.status().message(), "fashion-mnist:DIR"));
  CHECK(Contains(unknown.status().message(), "libsvm:FILE"));
}

TEST_CASE("LoadTrain and LoadTest find gzip or plain IDX files and LIBSVM pairs") {
  TempDir dir;
  // Training files compressed, test files plain under their uncompressed names.
  WriteGzip(dir.File("train-images-idx3-ubyte.gz"), Idx(0x08, {8, 2, 2}, ImagesPayload(8, 2, 2)));
  WriteGzip(dir.File("train-labels-idx1-ubyte.gz"), Idx(0x08, {8}, LabelsPayload(8, 10)));
  WritePlain(dir.File("t10k-images-idx3-ubyte"), Idx(0x08, {3, 2, 2}, ImagesPayload(3, 2, 2)));
  WritePlain(dir.File("t10k-labels-idx1-ubyte"), Idx(0x08, {3}, LabelsPayload(3, 10)));

  Result<DataSpec> spec = ParseDataSpec("idx:" + dir.path());
  REQUIRE(spec.ok());
  Result<Dataset> train = LoadTrain(*spec, Shard{1, 2});
  REQUIRE_MESSAGE(train.ok(), train.status().ToString());
  CheckIdxRows(*train, 4, 8, 4, 10);
  Result<Dataset> test = LoadTest(*spec);
  REQUIRE_MESSAGE(test.ok(), test.status().ToString());
  CheckIdxRows(*test, 0, 3, 4, 10);

  Result<DataSpec> elsewhere = ParseDataSpec("fashion-mnist:" + dir.File("nothing-here"));
  REQUIRE(elsewhere.ok());
  CheckRefused(LoadTest(*elsewhere), StatusCode::kNotFound, {"t10k-images-idx3-ubyte.gz"});

  WriteText(dir.File("a.svm"), "1 1:1\n0 2:1\n1 3:1\n0 1:2\n");
  WriteText(dir.File("a.svm.t"), "1 5:1\n");
  Result<DataSpec> libsvm = ParseDataSpec("libsvm:" + dir.File("a.svm"));
  REQUIRE(libsvm.ok());
  Result<Dataset> svm_train = LoadTrain(*libsvm, Shard{0, 2});
  REQUIRE(svm_train.ok());
  CHECK(svm_train->labels == std::vector<int32_t>{1, 0});
  CHECK(svm_train->dim == 3);
  Result<Dataset> svm_test = LoadTest(*libsvm);
  REQUIRE(svm_test.ok());
  CHECK(svm_test->rows() == 1);
  CHECK(svm_test->dim == 5);
}

TEST_CASE("A missing default Fashion-MNIST names the package that installs it") {
  TempDir dir;
  Result<DataSpec> spec = ParseDataSpec("fashion-mnist:" + dir.File("absent"));
  REQUIRE(spec.ok());
  // A directory the user named gets no hint; the default spelling does.
  Result<Dataset> named = LoadTrain(*spec, Shard{});
  REQUIRE_FALSE(named.ok());
  CHECK_FALSE(Contains(named.status().message(), "apt install"));
  spec->text = "fashion-mnist";  // as ParseDataSpec("fashion-mnist") spells it
  for (const Result<Dataset>& missing : {LoadTrain(*spec, Shard{}), LoadTest(*spec)}) {
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.status().code() == StatusCode::kNotFound);
    CHECK(Contains(missing.status().message(), "apt install dataset-fashion-mnist"));
  }
}

TEST_CASE("The installed Fashion-MNIST loads whole and in shards") {
  std::error_code ignored;
  if (!std::filesystem::is_directory(std::string(kFashionMnistDir), ignored)) {
    MESSAGE("skipped: " << kFashionMnistDir << " is not installed");
    return;
  }
  Result<DataSpec> spec = ParseDataSpec("fashion-mnist");
  REQUIRE(spec.ok());

  Result<Dataset> test = LoadTest(*spec);
  REQUIRE_MESSAGE(test.ok(), test.status().ToString());
  CHECK(test->rows() == 10000);
  CHECK(test->dim == 784);
  CHECK(test->classes == 10);
  CHECK(test->dense.size() == size_t{10000} * 784);
  const auto [low, high] = std::minmax_element(test->dense.begin(), test->dense.end());
  CHECK(*low == 0.0f);
  CHECK(*high == 1.0f);
  std::vector<int64_t> per_class(10, 0);
  for (int32_t label : test->labels) {
    REQUIRE(label >= 0);
    REQUIRE(label < 10);
    ++per_class[static_cast<size_t>(label)];
  }
  for (int64_t n : per_class) CHECK(n == 1000);

  const auto start = std::chrono::steady_clock::now();
  Result<Dataset> quarter = LoadTrain(*spec, Shard{1, 4});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE_MESSAGE(quarter.ok(), quarter.status().ToString());
  MESSAGE("a quarter of the Fashion-MNIST training set loaded in " << seconds << " s");
  CHECK(quarter->rows() == 15000);
  CHECK(quarter->dim == 784);
  CHECK(quarter->classes == 10);

  Result<Dataset> whole = LoadTrain(*spec, Shard{});
  REQUIRE(whole.ok());
  CHECK(whole->rows() == 60000);
  const auto offset = static_cast<std::ptrdiff_t>(15000 * 784);
  CHECK(std::equal(quarter->dense.begin(), quarter->dense.end(), whole->dense.begin() + offset));
  CHECK(std::equal(quarter->labels.begin(), quarter->labels.end(), whole->labels.begin() + 15000));
}

}  // namespace dmlps::data
