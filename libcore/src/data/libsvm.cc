// LIBSVM text files: one sample per line, "label index:value index:value ...",
// with 1-based, strictly increasing feature indices.
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "dmlps/data/dataset.h"

namespace dmlps::data {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
// A getline(3) buffer, freed when it goes out of scope.
struct LineBuffer {
  char* data = nullptr;
  size_t capacity = 0;
  LineBuffer() = default;
  LineBuffer(const LineBuffer&) = delete;
  LineBuffer& operator=(const LineBuffer&) = delete;
  ~LineBuffer() { std::free(data); }
};

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Removes and returns the first whitespace-separated token of `*rest`; empty
// when none is left.
std::string_view NextToken(std::string_view* rest) {
  size_t begin = 0;
  while (begin < rest->size() && IsBlank((*rest)[begin])) ++begin;
  size_t end = begin;
  while (end < rest->size() && !IsBlank((*rest)[end])) ++end;
  std::string_view token = rest->substr(begin, end - begin);
  rest->remove_prefix(end);
  return token;
}

// `token` in quotes for an error message, with unprintable bytes escaped and
// long tokens cut short.
std::string Quoted(std::string_view token) {
  constexpr size_t kMaxShown = 40;
  std::string out = "'";
  for (size_t i = 0; i < token.size() && i < kMaxShown; ++i) {
    const auto byte = static_cast<unsigned char>(token[i]);
    if (byte >= 0x20 && byte < 0x7F) {
      out += static_cast<char>(byte);
    } else {
      constexpr std::string_view kHex = "0123456789ABCDEF";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    }
  }
  if (token.size() > kMaxShown) out += "...";
  return out + "'";
}

// Parses all of `text` as a T; false if any of it is not part of the number.
template <typename T>
bool ParseWhole(std::string_view text, T* value, std::errc* error = nullptr) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  if (error != nullptr) *error = ec;
  return ec == std::errc() && ptr == end;
}

// Drops one leading '+', which from_chars does not take, unless a sign follows.
std::string_view WithoutPlus(std::string_view text) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+') {
    text.remove_prefix(1);
  }
  return text;
}

// The class a label names, or an empty optional with `*why` filled in.
std::optional<int32_t> ParseLabel(std::string_view token, std::string* why) {
  const std::string_view text = WithoutPlus(token);
  int64_t label = 0;
  double real = 0;
  if (!ParseWhole(text, &label)) {
    if (!ParseWhole(text, &real) || !std::isfinite(real) || real != std::floor(real) ||
        std::fabs(real) > 1e15) {
      *why = "label " + Quoted(token) + " is not an integer";
      return std::nullopt;
    }
    label = static_cast<int64_t>(real);
  }
  if (label == -1) return 0;
  if (label < 0) {
    *why = "label " + std::to_string(label) +
           " is negative; only -1 (read as class 0) and non-negative integers are accepted";
    return std::nullopt;
  }
  if (label >= std::numeric_limits<int32_t>::max()) {
    *why = "label " + std::to_string(label) + " is too large";
    return std::nullopt;
  }
  return static_cast<int32_t>(label);
}

// Parses one "index:value" token into a 0-based column and a value, requiring
// the index to exceed `previous` (1-based; 0 for the first feature).
bool ParseFeature(std::string_view token, int64_t previous, int64_t* index, float* value,
                  std::string* why) {
  const size_t colon = token.find(':');
  if (colon == std::string_view::npos) {
    *why = "expected INDEX:VALUE, found " + Quoted(token);
    return false;
  }
  if (!ParseWhole(token.substr(0, colon), index)) {
    *why = "bad feature index in " + Quoted(token);
    return false;
  }
  if (*index < 1) {
    *why = "feature index " + std::to_string(*index) + " in " + Quoted(token) +
           " is not allowed; indices start at 1";
    return false;
  }
  if (*index > std::numeric_limits<int32_t>::max()) {
    *why = "feature index " + std::to_string(*index) + " is too large";
    return false;
  }
  if (*index <= previous) {
    *why = "feature index " + std::to_string(*index) + " does not increase (the one before was " +
           std::to_string(previous) + ")";
    return false;
  }
  const std::string_view text = WithoutPlus(token.substr(colon + 1));
  double real = 0;
  std::errc error{};
  if (!ParseWhole(text, &real, &error)) {
    *why = error == std::errc::result_out_of_range
               ? "value in " + Quoted(token) + " is out of range"
               : "bad feature value in " + Quoted(token);
    return false;
  }
  if (!std::isfinite(real)) {
    *why = "value in " + Quoted(token) + " is not finite";
    return false;
  }
  if (std::fabs(real) > std::numeric_limits<float>::max()) {
    *why = "value in " + Quoted(token) + " is too large for a float";
    return false;
  }
  *value = static_cast<float>(real);
  return true;
}

// Keeps only rows [first, last) of a CSR dataset, rebasing its offsets.
void KeepRows(int64_t first, int64_t last, Dataset* data) {
  const int64_t begin = data->row_offsets[static_cast<size_t>(first)];
  const int64_t end = data->row_offsets[static_cast<size_t>(last)];
  data->cols.erase(data->cols.begin() + end, data->cols.end());
  data->cols.erase(data->cols.begin(), data->cols.begin() + begin);
  data->values.erase(data->values.begin() + end, data->values.end());
  data->values.erase(data->values.begin(), data->values.begin() + begin);
  data->labels.erase(data->labels.begin() + last, data->labels.end());
  data->labels.erase(data->labels.begin(), data->labels.begin() + first);
  data->row_offsets.erase(data->row_offsets.begin() + last + 1, data->row_offsets.end());
  data->row_offsets.erase(data->row_offsets.begin(), data->row_offsets.begin() + first);
  for (int64_t& offset : data->row_offsets) offset -= begin;
  data->cols.shrink_to_fit();
  data->values.shrink_to_fit();
  data->labels.shrink_to_fit();
  data->row_offsets.shrink_to_fit();
}

Result<Dataset> ReadLibsvmChecked(const std::string& path, Shard shard, int64_t max_features) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rbe"));
  if (file == nullptr) {
    const int err = errno;
    std::string message = path + ": " + std::strerror(err);
    if (err == ENOENT || err == ENOTDIR) return Status::NotFound(std::move(message));
    return Status::IOError(std::move(message));
  }

  Dataset data;
  data.row_offsets.push_back(0);
  int64_t dim = 0;
  int32_t largest = -1;
  LineBuffer line;
  int64_t line_number = 0;
  const int64_t memory = MachineMemoryBytes();
  std::string why;
  for (;;) {
    errno = 0;
    const ssize_t length = ::getline(&line.data, &line.capacity, file.get());
    if (length < 0) break;
    ++line_number;
    std::string_view rest(line.data, static_cast<size_t>(length));
    if (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
    rest = rest.substr(0, rest.find('#'));

    const std::string_view label_token = NextToken(&rest);
    if (label_token.empty()) continue;
    auto fail = [&](const std::string& what) {
      return Status::DataLoss(path + ":" + std::to_string(line_number) + ": " + what);
    };
    if (label_token.find(':') != std::string_view::npos) {
      return fail("missing label: the line starts with feature " + Quoted(label_token));
    }
    const std::optional<int32_t> label = ParseLabel(label_token, &why);
    if (!label) return fail(why);

    int64_t previous = 0;
    for (std::string_view token = NextToken(&rest); !token.empty(); token = NextToken(&rest)) {
      int64_t index = 0;
      float value = 0;
      if (!ParseFeature(token, previous, &index, &value, &why)) return fail(why);
      data.cols.push_back(static_cast<int32_t>(index - 1));
      data.values.push_back(value);
      previous = index;
    }
    if (previous > max_features) {
      return fail("feature index " + std::to_string(previous) + " is beyond --max-features " +
                  std::to_string(max_features));
    }
    if (previous > dim && previous * static_cast<int64_t>(sizeof(float)) > memory) {
      // One sample is made dense for a step: this one would not fit.
      return fail("feature index " + std::to_string(previous) + " makes one sample " +
                  std::to_string(previous * static_cast<int64_t>(sizeof(float))) +
                  " bytes, more than this machine's memory (" + std::to_string(memory) + " bytes)");
    }
    dim = std::max(dim, previous);
    largest = std::max(largest, *label);
    data.labels.push_back(*label);
    data.row_offsets.push_back(static_cast<int64_t>(data.cols.size()));
  }
  if (std::ferror(file.get())) return Status::IOError(path + ": " + std::strerror(errno));

  data.dim = dim;
  data.classes = static_cast<int64_t>(largest) + 1;
  const auto [first, last] = ShardRange(data.rows(), shard);
  if (first != 0 || last != data.rows()) KeepRows(first, last, &data);
  return data;
}

}  // namespace

Result<Dataset> ReadLibsvm(const std::string& path, Shard shard, int64_t max_features) {
  if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count) {
    return Status::InvalidArgument("shard " + std::to_string(shard.index) + " of " +
                                   std::to_string(shard.count) + " does not exist");
  }
  try {
    return ReadLibsvmChecked(path, shard, max_features);
  } catch (const std::bad_alloc&) {
    return Status::IOError(path + ": out of memory while loading it");
  } catch (const std::length_error&) {
    return Status::IOError(path + ": too large to hold in memory");
  }
}

}  // namespace dmlps::data
