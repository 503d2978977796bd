// Traces: a stream of msgpack records, one per event, that every dmlps
// binary can write (--trace FILE) and dmlps-trace reads. The format is
// documented in dmlps-trace(5).
//
// A record is a msgpack map:
//   t     int     time in microseconds since the Unix epoch (span: its start)
//   node  string  "server-0", "worker-3"
//   lane  string  "compute", "comm", "wait", "apply", "eval", or "run"
//   kind  string  "span", "instant" or "counter"
//   name  string  what happened ("step", "push", "accuracy", ...)
//   dur   int     span length in microseconds (spans only)
//   args  map     string keys, integer, float or string values
// A stream starts with a record of kind "meta", name "dmlps-trace", args
// {version: 1}. Streams concatenate: merged traces are valid traces.
#ifndef DMLPS_TRACE_TRACE_H_
#define DMLPS_TRACE_TRACE_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <msgpack.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "dmlps/base/mutex.h"
#include "dmlps/base/status.h"

namespace dmlps::trace {

inline constexpr int64_t kFormatVersion = 1;

using ArgValue = std::variant<int64_t, double, std::string>;
using Args = std::vector<std::pair<std::string, ArgValue>>;

struct Record {
  int64_t time_us = 0;
  std::string node;
  std::string lane;
  std::string kind;  // span | instant | counter | meta
  std::string name;
  int64_t dur_us = 0;
  Args args;

  // The numeric argument `key` (integers widened), or `fallback`.
  double Number(std::string_view key, double fallback = 0) const;
  // The string argument `key`, or empty.
  std::string Text(std::string_view key) const;
  bool Has(std::string_view key) const;
};

// Microseconds since the Unix epoch, now.
int64_t NowMicros();

// The record that opens a stream: kind "meta", name "dmlps-trace", args
// {version: kFormatVersion}.
Record MetaRecord(int64_t time_us, std::string node);

// Appends one record to a msgpack buffer.
void Pack(const Record& record, msgpack::sbuffer* out);

// Writes records for one node, buffered so that tracing costs well under 1%
// of a training step; the buffer goes out when it passes 64 KiB and at least
// every 200 ms, so a process that dies leaves all but its last moments.
// Safe to use from several threads.
class TraceWriter {
 public:
  // Opens `path` for writing ("-" is standard output) and writes the meta
  // record. IOError when the file cannot be created.
  static Result<std::unique_ptr<TraceWriter>> Open(const std::string& path, std::string node);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  const std::string& node() const { return node_; }

  void Span(std::string_view lane, std::string_view name, int64_t start_us, int64_t dur_us,
            Args args = {});
  void Instant(std::string_view lane, std::string_view name, int64_t time_us, Args args = {});
  // A counter track `name` with `value` at `time_us`.
  void Counter(std::string_view name, int64_t time_us, double value, Args args = {});
  // Writes what is buffered. IOError when the write fails (then tracing stops).
  Status Flush() EXCLUDES(mutex_);

 private:
  TraceWriter(std::FILE* file, bool owned, std::string node);
  void Add(Record record) EXCLUDES(mutex_);
  Status FlushLocked() REQUIRES(mutex_);

  Mutex mutex_;
  std::FILE* const file_ PT_GUARDED_BY(mutex_);  // written only with mutex_ held
  const bool owned_;
  const std::string node_;
  msgpack::sbuffer buffer_ GUARDED_BY(mutex_);
  int64_t last_flush_us_ GUARDED_BY(mutex_) = 0;
  bool failed_ GUARDED_BY(mutex_) = false;
};

// What a trace held: every record that could be read, and why reading
// stopped early (ok when the whole stream was read).
struct ReadResult {
  std::vector<Record> records;
  Status status;
};

// Decodes a stream. A truncated or corrupt record ends the reading with a
// DataLoss status naming `source` and the byte offset; what came before is
// kept. Meta records are checked (format version) and not returned.
ReadResult ParseTrace(std::string_view bytes, std::string_view source);

// Reads a whole file ("-": standard input) and parses it.
ReadResult ReadTrace(const std::string& path);

// Reads several traces, as the trace tools take them: a file that cannot be
// read ends the reading with its error (nothing returned); a damaged one
// gives what it held, `warn` is called with its DataLoss, and the result's
// status is that DataLoss once every file has been read.
ReadResult ReadTraces(const std::vector<std::string>& paths,
                      const std::function<void(const Status&)>& warn);

}  // namespace dmlps::trace

#endif  // DMLPS_TRACE_TRACE_H_
