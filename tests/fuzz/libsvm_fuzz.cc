// libFuzzer target for the LIBSVM reader (ReadLibsvm in
// dmlps/data/dataset.h). The input is the file's text as it is, written to an
// in-memory file that ReadLibsvm opens by path, so the seed corpus is plain
// LIBSVM files.
//
// Contracts checked:
//   - an error is DataLoss naming the file and line (IOError only when
//     memory runs out), never a crash;
//   - a dataset is well formed CSR: rows + 1 increasing offsets from 0,
//     strictly increasing columns below dim, finite values, labels below
//     classes;
//   - the reader is a fixed point: the dataset written back as LIBSVM text
//     (exact float values) reads back identical;
//   - a shard is the matching slice of the whole, with the same dim and
//     classes.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/data/dataset.h"
#include "fuzz_util.h"

namespace dmlps::fuzz {
namespace {

void CheckWellFormed(const data::Dataset& d) {
  FUZZ_CHECK(d.dense.empty() && d.sparse());
  FUZZ_CHECK(static_cast<int64_t>(d.row_offsets.size()) == d.rows() + 1);
  FUZZ_CHECK(d.row_offsets.front() == 0);
  FUZZ_CHECK(d.row_offsets.back() == static_cast<int64_t>(d.cols.size()));
  FUZZ_CHECK(d.cols.size() == d.values.size());
  FUZZ_CHECK(d.dim >= 0);
  for (int64_t r = 0; r < d.rows(); ++r) {
    FUZZ_CHECK(d.row_offsets[r] <= d.row_offsets[r + 1]);
    for (int64_t k = d.row_offsets[r]; k < d.row_offsets[r + 1]; ++k) {
      FUZZ_CHECK(d.cols[k] >= 0 && d.cols[k] < d.dim);
      if (k > d.row_offsets[r]) FUZZ_CHECK(d.cols[k] > d.cols[k - 1]);
      FUZZ_CHECK(std::isfinite(d.values[k]));
    }
    FUZZ_CHECK(d.labels[r] >= 0 && d.labels[r] < d.classes);
  }
}

// The dataset as LIBSVM text; %.17g of a float's double is exact.
std::string ToText(const data::Dataset& d) {
  std::string text;
  char number[64];
  for (int64_t r = 0; r < d.rows(); ++r) {
    text += std::to_string(d.labels[r]);
    for (int64_t k = d.row_offsets[r]; k < d.row_offsets[r + 1]; ++k) {
      std::snprintf(number, sizeof number, " %d:%.17g", d.cols[k] + 1,
                    static_cast<double>(d.values[k]));
      text += number;
    }
    text += '\n';
  }
  return text;
}

bool SameFloats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool Same(const data::Dataset& a, const data::Dataset& b) {
  return a.dim == b.dim && a.classes == b.classes && a.labels == b.labels &&
         a.row_offsets == b.row_offsets && a.cols == b.cols && SameFloats(a.values, b.values);
}

int FuzzLibsvm(const uint8_t* data, size_t size) {
  static MemFile file("libsvm");
  file.Set(std::string_view(reinterpret_cast<const char*>(data), size));

  Result<data::Dataset> whole = data::ReadLibsvm(file.path());
  if (!whole.ok()) {
    const Status& s = whole.status();
    FUZZ_CHECK(s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kIOError);
    FUZZ_CHECK(s.message().starts_with(file.path() + ":"));
    return 0;
  }
  CheckWellFormed(*whole);

  // Written back and read again, the dataset does not change. The
  // classes a file declares are its labels', so they survive too.
  std::string text = ToText(*whole);
  file.Set(text);
  Result<data::Dataset> again = data::ReadLibsvm(file.path());
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(Same(*whole, *again));

  // A shard of the original file, chosen by its size: the last of 1 to 4.
  file.Set(std::string_view(reinterpret_cast<const char*>(data), size));
  const data::Shard shard{static_cast<int64_t>(size % 4), static_cast<int64_t>(size % 4) + 1};
  Result<data::Dataset> part = data::ReadLibsvm(file.path(), shard);
  FUZZ_CHECK(part.ok());
  CheckWellFormed(*part);
  const auto [first, last] = data::ShardRange(whole->rows(), shard);
  FUZZ_CHECK(part->rows() == last - first);
  FUZZ_CHECK(part->dim == whole->dim && part->classes == whole->classes);
  const int64_t base = whole->row_offsets[first];
  for (int64_t r = 0; r < part->rows(); ++r) {
    FUZZ_CHECK(part->labels[r] == whole->labels[first + r]);
    FUZZ_CHECK(part->row_offsets[r + 1] == whole->row_offsets[first + r + 1] - base);
  }
  for (size_t k = 0; k < part->cols.size(); ++k) {
    FUZZ_CHECK(part->cols[k] == whole->cols[base + k]);
    FUZZ_CHECK(std::memcmp(&part->values[k], &whole->values[base + k], sizeof(float)) == 0);
  }
  return 0;
}

}  // namespace
}  // namespace dmlps::fuzz

DMLPS_FUZZ_TARGET(FuzzLibsvm)
