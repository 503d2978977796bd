// IDX files, the format of MNIST and Fashion-MNIST: a big-endian header
// (two zero bytes, an element type, a dimension count, one 32-bit size per
// dimension) followed by the elements. zlib reads gzip and plain files alike.
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "dmlps/data/dataset.h"

namespace dmlps::data {
namespace {

constexpr uint8_t kTypeUbyte = 0x08;
constexpr int kImageDims = 3;  // images x rows x columns
constexpr int kLabelDims = 1;  // labels
constexpr size_t kBlockBytes = size_t{1} << 20;
constexpr unsigned kZlibBufferBytes = 1u << 18;
// More than this many labels are not reserved up front on the header's
// word: a header is a claim, and the vectors grow as the data proves it.
constexpr uint64_t kMaxReserve = uint64_t{1} << 20;

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

Result<GzFile> OpenGz(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string message = path + ": " + std::strerror(err);
    if (err == ENOENT || err == ENOTDIR) return Status::NotFound(std::move(message));
    return Status::IOError(std::move(message));
  }
  gzFile file = gzdopen(fd, "rb");
  if (file == nullptr) {
    ::close(fd);
    return Status::IOError(path + ": cannot start decompressing (out of memory)");
  }
  gzbuffer(file, kZlibBufferBytes);  // must precede the first read
  return GzFile(file);
}

Status GzReadError(gzFile file, const std::string& path) {
  int code = Z_OK;
  const char* text = gzerror(file, &code);
  if (code == Z_ERRNO) return Status::IOError(path + ": " + std::strerror(errno));
  // zlib puts the name it knows the file by, "<fd:N>", before its message.
  std::string_view what = text != nullptr ? text : "unknown error";
  if (what.starts_with("<fd:")) {
    const size_t colon = what.find(": ");
    if (colon != std::string_view::npos) what.remove_prefix(colon + 2);
  }
  return Status::DataLoss(path + ": corrupt gzip data: " + std::string(what));
}

// Reads up to `size` bytes into `buffer`; fewer only where the data ends.
Result<size_t> ReadUpTo(gzFile file, const std::string& path, void* buffer, size_t size) {
  size_t got = 0;
  while (got < size) {
    const auto chunk = static_cast<unsigned>(std::min<size_t>(size - got, size_t{1} << 30));
    const int n = gzread(file, static_cast<char*>(buffer) + got, chunk);
    if (n < 0) return GzReadError(file, path);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

uint32_t BigEndian32(const unsigned char* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

std::string Hex(uint32_t value, int digits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%0*X", digits, value);
  return text;
}

std::string_view TypeName(uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "short";
    case 0x0C:
      return "int";
    case 0x0D:
      return "float";
    case 0x0E:
      return "double";
    default:
      return "unknown";
  }
}

// Reads and checks the header of an IDX file of unsigned bytes with `dims`
// dimensions; returns their sizes. `layout` describes them for a reader.
Result<std::vector<uint64_t>> ReadHeader(gzFile file, const std::string& path, int dims,
                                         std::string_view layout) {
  std::array<unsigned char, 4> magic{};
  DMLPS_ASSIGN_OR_RETURN(const size_t got, ReadUpTo(file, path, magic.data(), magic.size()));
  if (got < magic.size()) {
    return Status::DataLoss(path + ": not an IDX file: " + std::to_string(got) +
                            " bytes is too short for its header");
  }
  if (magic[0] != 0 || magic[1] != 0) {
    return Status::DataLoss(path + ": not an IDX file (magic number " +
                            Hex(BigEndian32(magic.data()), 8) + ")");
  }
  if (magic[2] != kTypeUbyte) {
    return Status::DataLoss(path + ": IDX element type " + Hex(magic[2], 2) + " (" +
                            std::string(TypeName(magic[2])) +
                            ") is not supported; only unsigned bytes (0x08) are");
  }
  if (magic[3] != dims) {
    return Status::DataLoss(path + ": expected an IDX file of " + std::to_string(dims) +
                            " dimensions (" + std::string(layout) + "), but its header says " +
                            std::to_string(magic[3]));
  }
  std::vector<unsigned char> raw(4 * static_cast<size_t>(dims));
  DMLPS_ASSIGN_OR_RETURN(const size_t got_sizes, ReadUpTo(file, path, raw.data(), raw.size()));
  if (got_sizes < raw.size()) {
    return Status::DataLoss(path + ": truncated IDX header: the dimension sizes need " +
                            std::to_string(raw.size()) + " bytes but only " +
                            std::to_string(got_sizes) + " follow the magic number");
  }
  std::vector<uint64_t> sizes(static_cast<size_t>(dims));
  for (size_t i = 0; i < sizes.size(); ++i) sizes[i] = BigEndian32(raw.data() + 4 * i);
  return sizes;
}

// Checks that the data ended where its header said, which also makes zlib
// verify the gzip checksum that follows the last byte.
Status CheckEnd(gzFile file, const std::string& path, uint64_t count, std::string_view items) {
  unsigned char extra = 0;
  DMLPS_ASSIGN_OR_RETURN(const size_t got, ReadUpTo(file, path, &extra, 1));
  if (got != 0) {
    return Status::DataLoss(path + ": holds more data than the " + std::to_string(count) + " " +
                            std::string(items) + " its header promises");
  }
  return Status::Ok();
}

// Reads `count` labels, keeping those in rows [first, last) and the largest.
Status ReadLabels(gzFile file, const std::string& path, uint64_t count, uint64_t first,
                  uint64_t last, std::vector<int32_t>* labels, int32_t* largest) {
  labels->reserve(static_cast<size_t>(std::min(last - first, kMaxReserve)));
  std::vector<unsigned char> block(kBlockBytes);
  uint64_t position = 0;
  while (position < count) {
    const auto want = static_cast<size_t>(std::min<uint64_t>(block.size(), count - position));
    DMLPS_ASSIGN_OR_RETURN(const size_t got, ReadUpTo(file, path, block.data(), want));
    for (size_t i = 0; i < got; ++i) {
      const uint64_t row = position + i;
      *largest = std::max<int32_t>(*largest, block[i]);
      if (row >= first && row < last) labels->push_back(block[i]);
    }
    position += got;
    if (got < want) {
      return Status::DataLoss(path + ": truncated: the header promises " + std::to_string(count) +
                              " labels but the file holds only " + std::to_string(position));
    }
  }
  return CheckEnd(file, path, count, "labels");
}

// Reads `count` images of `dim` bytes, keeping rows [first, last) as floats.
Status ReadPixels(gzFile file, const std::string& path, uint64_t count, uint64_t dim,
                  uint64_t first, uint64_t last, std::vector<float>* pixels) {
  std::array<float, 256> scale{};
  for (size_t v = 0; v < scale.size(); ++v) scale[v] = static_cast<float>(v) / 255.0f;

  const uint64_t total = count * dim;
  const uint64_t keep_begin = first * dim;
  const uint64_t keep_end = last * dim;
  // The caller checked that the rows kept fit in memory; reserving them all
  // spares the copies of growing (which would take up to twice the data at
  // once), and pages reserved but never written take no memory.
  pixels->reserve(static_cast<size_t>(keep_end - keep_begin));
  std::vector<unsigned char> block(kBlockBytes);
  uint64_t position = 0;  // bytes of pixel data consumed so far
  while (position < total) {
    const auto want = static_cast<size_t>(std::min<uint64_t>(block.size(), total - position));
    DMLPS_ASSIGN_OR_RETURN(const size_t got, ReadUpTo(file, path, block.data(), want));
    const uint64_t begin = std::max(position, keep_begin);
    const uint64_t end = std::min(position + got, keep_end);
    if (begin < end) {
      const size_t old_size = pixels->size();
      pixels->resize(old_size + static_cast<size_t>(end - begin));
      const unsigned char* in = block.data() + (begin - position);
      float* out = pixels->data() + old_size;
      for (uint64_t i = 0; i < end - begin; ++i) out[i] = scale[in[i]];
    }
    position += got;
    if (got < want) {
      return Status::DataLoss(path + ": truncated: the header promises " + std::to_string(count) +
                              " images of " + std::to_string(dim) +
                              " bytes but the data ends after " + std::to_string(position / dim) +
                              " whole images (" + std::to_string(position) + " of " +
                              std::to_string(total) + " bytes)");
    }
  }
  return CheckEnd(file, path, count, "images");
}

Result<Dataset> ReadIdxChecked(const std::string& images_path, const std::string& labels_path,
                               Shard shard, int64_t max_features) {
  DMLPS_ASSIGN_OR_RETURN(GzFile images, OpenGz(images_path));
  DMLPS_ASSIGN_OR_RETURN(GzFile labels, OpenGz(labels_path));
  DMLPS_ASSIGN_OR_RETURN(
      const std::vector<uint64_t> image_sizes,
      ReadHeader(images.get(), images_path, kImageDims, "images x rows x columns"));
  DMLPS_ASSIGN_OR_RETURN(const std::vector<uint64_t> label_sizes,
                         ReadHeader(labels.get(), labels_path, kLabelDims, "labels"));

  const uint64_t count = image_sizes[0];
  if (label_sizes[0] != count) {
    return Status::DataLoss(images_path + " holds " + std::to_string(count) + " images but " +
                            labels_path + " holds " + std::to_string(label_sizes[0]) + " labels");
  }
  const uint64_t dim = image_sizes[1] * image_sizes[2];
  if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return Status::DataLoss(images_path + ": images of " + std::to_string(image_sizes[1]) + " x " +
                            std::to_string(image_sizes[2]) + " pixels are not supported");
  }

  if (dim > static_cast<uint64_t>(max_features)) {
    return Status::DataLoss(images_path + ": images of " + std::to_string(image_sizes[1]) + " x " +
                            std::to_string(image_sizes[2]) + " pixels are beyond --max-features " +
                            std::to_string(max_features));
  }
  const auto [first, last] = ShardRange(static_cast<int64_t>(count), shard);
  // The rows kept, as floats, must fit in memory (count <= 2^32 and dim <
  // 2^31, so this cannot overflow).
  const uint64_t bytes = static_cast<uint64_t>(last - first) * dim * sizeof(float);
  const auto memory = static_cast<uint64_t>(MachineMemoryBytes());
  if (bytes > memory) {
    return Status::DataLoss(images_path + ": its header declares " + std::to_string(last - first) +
                            " images of " + std::to_string(image_sizes[1]) + " x " +
                            std::to_string(image_sizes[2]) + " pixels to keep, " +
                            std::to_string(bytes) + " bytes as floats, more than this machine's " +
                            "memory (" + std::to_string(memory) + " bytes)");
  }
  Dataset data;
  data.dim = static_cast<int64_t>(dim);
  int32_t largest = -1;
  DMLPS_RETURN_IF_ERROR(ReadLabels(labels.get(), labels_path, count, static_cast<uint64_t>(first),
                                   static_cast<uint64_t>(last), &data.labels, &largest));
  DMLPS_RETURN_IF_ERROR(ReadPixels(images.get(), images_path, count, dim,
                                   static_cast<uint64_t>(first), static_cast<uint64_t>(last),
                                   &data.dense));
  data.classes = largest + 1;
  return data;
}

}  // namespace

Result<Dataset> ReadIdx(const std::string& images_path, const std::string& labels_path, Shard shard,
                        int64_t max_features) {
  if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count) {
    return Status::InvalidArgument("shard " + std::to_string(shard.index) + " of " +
                                   std::to_string(shard.count) + " does not exist");
  }
  try {
    return ReadIdxChecked(images_path, labels_path, shard, max_features);
  } catch (const std::bad_alloc&) {
    return Status::IOError(images_path + ": out of memory while loading it");
  }
}

}  // namespace dmlps::data
