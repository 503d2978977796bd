// libFuzzer target for the IDX reader (ReadIdx in dmlps/data/dataset.h).
// The input is a shard byte, the labels file and the images file (see
// SplitIdxInput in fuzz_util.h); both files are written to in-memory files
// that ReadIdx opens by path.
//
// Contracts checked:
//   - an error is DataLoss (IOError only when memory runs out), never a crash;
//   - a dataset is well formed: dense rows of `dim` > 0 pixels in [0, 1],
//     one label per row, every label below `classes`;
//   - for plain (not gzip) files, the read succeeds exactly when the two
//     headers are right and the files hold exactly what they promise, and
//     then gives those bytes: pixel / 255 and labels as they are;
//   - a shard is the matching slice of the whole, with the same dim and
//     classes.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "dmlps/data/dataset.h"
#include "fuzz_util.h"

namespace dmlps::fuzz {
namespace {

uint32_t BigEndian32(std::string_view bytes, size_t at) {
  const auto b = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + i]));
  };
  return (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
}

bool Gzipped(std::string_view file) {
  return file.size() >= 2 && static_cast<uint8_t>(file[0]) == 0x1F &&
         static_cast<uint8_t>(file[1]) == 0x8B;
}

// Whether two plain IDX files make a dataset, read from the format alone.
bool PlainFilesAreValid(std::string_view labels, std::string_view images) {
  if (labels.size() < 8 || labels[0] != 0 || labels[1] != 0 || labels[2] != 0x08 ||
      labels[3] != 1) {
    return false;
  }
  if (images.size() < 16 || images[0] != 0 || images[1] != 0 || images[2] != 0x08 ||
      images[3] != 3) {
    return false;
  }
  const uint64_t count = BigEndian32(labels, 4);
  const uint64_t dim = uint64_t{BigEndian32(images, 8)} * BigEndian32(images, 12);
  // ReadIdx's default --max-features bounds the pixels of an image; the
  // memory bound cannot bite on an input this small.
  return BigEndian32(images, 4) == count && labels.size() == 8 + count && dim >= 1 &&
         dim <= static_cast<uint64_t>(data::kDefaultMaxFeatures) &&
         images.size() == 16 + count * dim;
}

void CheckWellFormed(const data::Dataset& d) {
  FUZZ_CHECK(!d.sparse() && d.cols.empty() && d.values.empty());
  FUZZ_CHECK(d.dim >= 1);
  FUZZ_CHECK(static_cast<int64_t>(d.dense.size()) == d.rows() * d.dim);
  for (float pixel : d.dense) FUZZ_CHECK(pixel >= 0.0f && pixel <= 1.0f);
  FUZZ_CHECK(d.classes <= 256);
  for (int32_t label : d.labels) FUZZ_CHECK(label >= 0 && label < d.classes);
}

int FuzzIdx(const uint8_t* data, size_t size) {
  static MemFile labels_file("idx-labels");
  static MemFile images_file("idx-images");
  const IdxInput in = SplitIdxInput(data, size);
  labels_file.Set(in.labels);
  images_file.Set(in.images);

  Result<data::Dataset> whole = data::ReadIdx(images_file.path(), labels_file.path());
  const bool plain = !Gzipped(in.labels) && !Gzipped(in.images);
  if (plain) FUZZ_CHECK(whole.ok() == PlainFilesAreValid(in.labels, in.images));
  if (!whole.ok()) {
    const StatusCode code = whole.status().code();
    FUZZ_CHECK(code == StatusCode::kDataLoss || code == StatusCode::kIOError);
    FUZZ_CHECK(!whole.status().message().empty());
    return 0;
  }
  CheckWellFormed(*whole);
  if (plain) {
    FUZZ_CHECK(whole->rows() == static_cast<int64_t>(in.labels.size()) - 8);
    for (int64_t i = 0; i < whole->rows(); ++i) {
      FUZZ_CHECK(whole->labels[i] == static_cast<uint8_t>(in.labels[8 + i]));
    }
    for (size_t i = 0; i < whole->dense.size(); ++i) {
      FUZZ_CHECK(whole->dense[i] == static_cast<uint8_t>(in.images[16 + i]) / 255.0f);
    }
  }

  if (in.shard_count == 1) return 0;  // the same read again
  const data::Shard shard{in.shard_index, in.shard_count};
  Result<data::Dataset> part = data::ReadIdx(images_file.path(), labels_file.path(), shard);
  FUZZ_CHECK(part.ok());
  CheckWellFormed(*part);
  const auto [first, last] = data::ShardRange(whole->rows(), shard);
  FUZZ_CHECK(part->rows() == last - first);
  FUZZ_CHECK(part->dim == whole->dim && part->classes == whole->classes);
  for (int64_t i = 0; i < part->rows(); ++i) {
    FUZZ_CHECK(part->labels[i] == whole->labels[first + i]);
  }
  for (size_t i = 0; i < part->dense.size(); ++i) {
    FUZZ_CHECK(part->dense[i] == whole->dense[first * whole->dim + i]);
  }
  return 0;
}

}  // namespace
}  // namespace dmlps::fuzz

DMLPS_FUZZ_TARGET(FuzzIdx)
