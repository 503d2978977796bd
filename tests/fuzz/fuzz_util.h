// Helpers shared by the libFuzzer targets in this folder and make_seeds.cc:
// a contract check that survives NDEBUG, the entry point, an in-memory file
// for readers that only take a path, and the framing that turns one fuzz
// input into ZeroMQ frames.
#ifndef DMLPS_TESTS_FUZZ_FUZZ_UTIL_H_
#define DMLPS_TESTS_FUZZ_FUZZ_UTIL_H_

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

// Stops the run with a message when a reader broke its contract: libFuzzer
// reports the abort as a crash and saves the input. Unlike assert, it stays
// on in release builds.
#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: contract violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

// Defines libFuzzer's entry point as a call of `fn`, a function of
// dmlps::fuzz taking (const uint8_t* data, size_t size) and returning 0: the
// target's checks live in the project's namespace, the entry point outside.
#define DMLPS_FUZZ_TARGET(fn)                                               \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { \
    return dmlps::fuzz::fn(data, size);                                     \
  }

namespace dmlps::fuzz {

// An anonymous in-memory file (memfd) that readers open by its path,
// /proc/self/fd/N; each open starts at offset 0. One per process, reused
// across runs, so a run costs no file system work.
class MemFile {
 public:
  explicit MemFile(const char* name) {
    fd_ = ::memfd_create(name, MFD_CLOEXEC);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  ~MemFile() { ::close(fd_); }

  // Replaces the file's content with `bytes`.
  void Set(std::string_view bytes) {
    if (::ftruncate(fd_, 0) != 0) {
      std::perror("ftruncate");
      std::abort();
    }
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n =
          ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
      if (n <= 0) {
        std::perror("pwrite");
        std::abort();
      }
      done += static_cast<size_t>(n);
    }
  }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// The codec target's input: one option byte, then frames, each
//   [flags: u8][length: u16 little-endian][length bytes]
// flags bit 0 ends a message (the input's end ends the last one). A frame
// cut short by the end of the input keeps the bytes that are there.
//
// Option byte: bits 0-1 the index of the header frame in each message (a
// ROUTER socket puts the peer's identity first), bit 2 frames point into the
// input instead of owning a copy (so their data may be misaligned), bit 3
// received chunks holding NaN or infinity are excluded, as the server does.
inline constexpr uint8_t kEndOfMessage = 1;

struct FramedInput {
  uint8_t options = 0;
  // Each message: its frames as [offset, offset + size) into the input.
  struct Frame {
    size_t offset;
    size_t size;
  };
  std::vector<std::vector<Frame>> messages;
};

inline FramedInput ParseFraming(const uint8_t* data, size_t size) {
  FramedInput in;
  if (size == 0) return in;
  in.options = data[0];
  size_t at = 1;
  std::vector<FramedInput::Frame> current;
  while (at < size) {
    const uint8_t flags = data[at];
    size_t length = 0;
    if (at + 1 < size) length |= data[at + 1];
    if (at + 2 < size) length |= static_cast<size_t>(data[at + 2]) << 8;
    const size_t begin = std::min(at + 3, size);
    const size_t end = std::min(begin + length, size);
    current.push_back({begin, end - begin});
    at = end;
    if ((flags & kEndOfMessage) != 0) {
      in.messages.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) in.messages.push_back(std::move(current));
  return in;
}

// Appends one frame in the framing above. REQUIRES: bytes.size() < 65536.
inline void AppendFrame(std::string_view bytes, bool end_of_message, std::string* out) {
  out->push_back(static_cast<char>(end_of_message ? kEndOfMessage : 0));
  out->push_back(static_cast<char>(bytes.size() & 0xFF));
  out->push_back(static_cast<char>((bytes.size() >> 8) & 0xFF));
  out->append(bytes);
}

// The IDX target's input: [shard: u8][labels length: u16 little-endian]
// [labels file][images file]. Shard byte: count = 1 + (b >> 4) % 4, index =
// (b & 15) % count.
struct IdxInput {
  int64_t shard_index = 0;
  int64_t shard_count = 1;
  std::string_view labels;
  std::string_view images;
};

inline IdxInput SplitIdxInput(const uint8_t* data, size_t size) {
  IdxInput in;
  if (size == 0) return in;
  in.shard_count = 1 + (data[0] >> 4) % 4;
  in.shard_index = (data[0] & 15) % in.shard_count;
  size_t length = 0;
  if (size > 1) length |= data[1];
  if (size > 2) length |= static_cast<size_t>(data[2]) << 8;
  const size_t begin = std::min<size_t>(3, size);
  const size_t end = std::min(begin + length, size);
  const char* chars = reinterpret_cast<const char*>(data);
  in.labels = std::string_view(chars + begin, end - begin);
  in.images = std::string_view(chars + end, size - end);
  return in;
}

}  // namespace dmlps::fuzz

#endif  // DMLPS_TESTS_FUZZ_FUZZ_UTIL_H_
