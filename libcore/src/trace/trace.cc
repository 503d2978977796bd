#include "dmlps/trace/trace.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <sstream>

#include "dmlps/base/msgpack_double.h"

namespace dmlps::trace {
namespace {

constexpr size_t kFlushBytes = 64 << 10;
constexpr int64_t kFlushMicros = 200'000;

msgpack::unpack_limit RecordLimits() {
  return msgpack::unpack_limit(/*array=*/64, /*map=*/64, /*str=*/1 << 16, /*bin=*/0, /*ext=*/0,
                               /*depth=*/4);
}

void PackString(msgpack::packer<msgpack::sbuffer>& p, std::string_view s) {
  p.pack_str(static_cast<uint32_t>(s.size()));
  p.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

// Reads one record from a decoded map; false with `why` when it is not one.
bool ToRecord(const msgpack::object& obj, Record* out, std::string* why) {
  if (obj.type != msgpack::type::MAP) {
    *why = "a record is not a map";
    return false;
  }
  bool has_time = false;
  for (uint32_t i = 0; i < obj.via.map.size; ++i) {
    const msgpack::object_kv& kv = obj.via.map.ptr[i];
    if (kv.key.type != msgpack::type::STR) {
      *why = "a record key is not a string";
      return false;
    }
    const std::string key = kv.key.as<std::string>();
    const msgpack::object& v = kv.val;
    if (key == "t" || key == "dur") {
      if (v.type != msgpack::type::POSITIVE_INTEGER && v.type != msgpack::type::NEGATIVE_INTEGER) {
        *why = "'" + key + "' is not an integer";
        return false;
      }
      // Times within 2^53 us (285 years) of the epoch, durations not
      // negative: a span's end, time plus duration, cannot overflow.
      constexpr uint64_t kMaxMicros = uint64_t{1} << 53;
      const bool negative = v.type == msgpack::type::NEGATIVE_INTEGER;
      const uint64_t magnitude =
          negative ? uint64_t{0} - static_cast<uint64_t>(v.via.i64) : v.via.u64;
      if (magnitude > kMaxMicros || (negative && key == "dur")) {
        *why = "'" + key + "' out of range";
        return false;
      }
      (key == "t" ? out->time_us : out->dur_us) =
          negative ? v.via.i64 : static_cast<int64_t>(v.via.u64);
      has_time = has_time || key == "t";
    } else if (key == "node" || key == "lane" || key == "kind" || key == "name") {
      if (v.type != msgpack::type::STR) {
        *why = "'" + key + "' is not a string";
        return false;
      }
      std::string& field = key == "node"   ? out->node
                           : key == "lane" ? out->lane
                           : key == "kind" ? out->kind
                                           : out->name;
      field = v.as<std::string>();
    } else if (key == "args") {
      if (v.type != msgpack::type::MAP) {
        *why = "'args' is not a map";
        return false;
      }
      for (uint32_t j = 0; j < v.via.map.size; ++j) {
        const msgpack::object_kv& a = v.via.map.ptr[j];
        if (a.key.type != msgpack::type::STR) {
          *why = "an argument name is not a string";
          return false;
        }
        ArgValue value;
        switch (a.val.type) {
          // msgpack writes a double that is a whole number as an integer, so
          // one above int64's range comes back as such: keep it a double.
          case msgpack::type::POSITIVE_INTEGER:
            if (a.val.via.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
              value = static_cast<double>(a.val.via.u64);
            } else {
              value = static_cast<int64_t>(a.val.via.u64);
            }
            break;
          case msgpack::type::NEGATIVE_INTEGER:
            value = a.val.via.i64;
            break;
          case msgpack::type::FLOAT32:
          case msgpack::type::FLOAT64:
            value = a.val.as<double>();
            break;
          case msgpack::type::STR:
            value = a.val.as<std::string>();
            break;
          case msgpack::type::BOOLEAN:
            value = static_cast<int64_t>(a.val.via.boolean);
            break;
          default:
            continue;  // values of other types are ignored, not fatal
        }
        out->args.emplace_back(a.key.as<std::string>(), std::move(value));
      }
    }
    // Unknown keys are ignored: newer writers may add fields.
  }
  if (!has_time || out->kind.empty()) {
    *why = "a record lacks 't' or 'kind'";
    return false;
  }
  return true;
}

}  // namespace

double Record::Number(std::string_view key, double fallback) const {
  for (const auto& [k, v] : args) {
    if (k != key) continue;
    if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    if (const auto* d = std::get_if<double>(&v)) return *d;
  }
  return fallback;
}

std::string Record::Text(std::string_view key) const {
  for (const auto& [k, v] : args) {
    if (k == key) {
      if (const auto* s = std::get_if<std::string>(&v)) return *s;
    }
  }
  return {};
}

bool Record::Has(std::string_view key) const {
  for (const auto& [k, v] : args) {
    if (k == key) return true;
  }
  return false;
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Record MetaRecord(int64_t time_us, std::string node) {
  return {time_us, std::move(node), "run", "meta", "dmlps-trace", 0, {{"version", kFormatVersion}}};
}

void Pack(const Record& r, msgpack::sbuffer* out) {
  msgpack::packer<msgpack::sbuffer> p(*out);
  const bool span = r.kind == "span";
  p.pack_map(5 + (span ? 1 : 0) + (r.args.empty() ? 0 : 1));
  PackString(p, "t");
  p.pack(r.time_us);
  PackString(p, "node");
  PackString(p, r.node);
  PackString(p, "lane");
  PackString(p, r.lane);
  PackString(p, "kind");
  PackString(p, r.kind);
  PackString(p, "name");
  PackString(p, r.name);
  if (span) {
    PackString(p, "dur");
    p.pack(r.dur_us);
  }
  if (!r.args.empty()) {
    PackString(p, "args");
    p.pack_map(static_cast<uint32_t>(r.args.size()));
    for (const auto& [k, v] : r.args) {
      PackString(p, k);
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, std::string>) {
              PackString(p, x);
            } else if constexpr (std::is_same_v<T, double>) {
              PackDouble(p, *out, x);
            } else {
              p.pack(x);
            }
          },
          v);
    }
  }
}

Result<std::unique_ptr<TraceWriter>> TraceWriter::Open(const std::string& path, std::string node) {
  std::FILE* file = path == "-" ? stdout : std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return Status::IOError("cannot write the trace " + path + ": " + std::strerror(errno));
  }
  std::unique_ptr<TraceWriter> writer(new TraceWriter(file, path != "-", std::move(node)));
  writer->Add(MetaRecord(NowMicros(), writer->node_));
  DMLPS_RETURN_IF_ERROR(writer->Flush());
  return writer;
}

TraceWriter::TraceWriter(std::FILE* file, bool owned, std::string node)
    : file_(file), owned_(owned), node_(std::move(node)) {}

TraceWriter::~TraceWriter() {
  (void)Flush();
  if (owned_) std::fclose(file_);
}

void TraceWriter::Span(std::string_view lane, std::string_view name, int64_t start_us,
                       int64_t dur_us, Args args) {
  Add({start_us, node_, std::string(lane), "span", std::string(name), dur_us, std::move(args)});
}

void TraceWriter::Instant(std::string_view lane, std::string_view name, int64_t time_us,
                          Args args) {
  Add({time_us, node_, std::string(lane), "instant", std::string(name), 0, std::move(args)});
}

void TraceWriter::Counter(std::string_view name, int64_t time_us, double value, Args args) {
  args.insert(args.begin(), {"value", value});
  Add({time_us, node_, "counter", "counter", std::string(name), 0, std::move(args)});
}

void TraceWriter::Add(Record record) {
  MutexLock lock(&mutex_);
  if (failed_) return;
  Pack(record, &buffer_);
  const int64_t now = record.time_us + record.dur_us;
  if (buffer_.size() >= kFlushBytes || now - last_flush_us_ >= kFlushMicros) {
    (void)FlushLocked();
  }
}

Status TraceWriter::Flush() {
  MutexLock lock(&mutex_);
  return FlushLocked();
}

Status TraceWriter::FlushLocked() {
  last_flush_us_ = NowMicros();
  if (failed_) return Status::IOError("tracing stopped after a failed write");
  if (buffer_.size() > 0) {
    const size_t written = std::fwrite(buffer_.data(), 1, buffer_.size(), file_);
    const bool whole = written == buffer_.size();
    buffer_.clear();
    if (!whole || std::fflush(file_) != 0 || std::ferror(file_)) {
      failed_ = true;
      return Status::IOError(std::string("cannot write the trace: ") + std::strerror(errno));
    }
  }
  return Status::Ok();
}

ReadResult ParseTrace(std::string_view bytes, std::string_view source) {
  ReadResult result;
  size_t offset = 0;
  while (offset < bytes.size()) {
    const size_t start = offset;
    Record record;
    std::string why;
    try {
      msgpack::object_handle handle =
          msgpack::unpack(bytes.data(), bytes.size(), offset, nullptr, nullptr, RecordLimits());
      if (!ToRecord(handle.get(), &record, &why)) offset = start;
    } catch (const msgpack::insufficient_bytes&) {
      why = "truncated record";
      offset = start;
    } catch (const std::exception& e) {
      why = std::string("corrupt record (") + e.what() + ")";
      offset = start;
    }
    if (!why.empty()) {
      result.status = Status::DataLoss(
          std::string(source) + ": " + why + " at byte offset " + std::to_string(start) + "; " +
          std::to_string(result.records.size()) + " records before it were read");
      return result;
    }
    if (record.kind == "meta") {
      const double version = record.Number("version", 0);
      if (record.name == "dmlps-trace" && version > kFormatVersion) {
        // Shown as read: any double, which a cast to int64 need not hold.
        std::ostringstream shown;
        shown << version;
        result.status =
            Status::DataLoss(std::string(source) + ": trace format version " + shown.str() +
                             " is newer than this reader's " + std::to_string(kFormatVersion));
        return result;
      }
      continue;
    }
    result.records.push_back(std::move(record));
  }
  return result;
}

ReadResult ReadTrace(const std::string& path) {
  std::string bytes;
  if (path == "-") {
    std::ostringstream all;
    all << std::cin.rdbuf();
    bytes = all.str();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      ReadResult r;
      r.status = Status::NotFound(path + ": " + std::strerror(errno));
      return r;
    }
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return ParseTrace(bytes, path == "-" ? "standard input" : path);
}

ReadResult ReadTraces(const std::vector<std::string>& paths,
                      const std::function<void(const Status&)>& warn) {
  ReadResult all;
  for (const std::string& path : paths) {
    ReadResult read = ReadTrace(path);
    if (!read.status.ok() && read.status.code() != StatusCode::kDataLoss) {
      return {{}, read.status};
    }
    if (!read.status.ok()) {
      warn(read.status);
      all.status = read.status;
    }
    all.records.insert(all.records.end(), std::make_move_iterator(read.records.begin()),
                       std::make_move_iterator(read.records.end()));
  }
  return all;
}

}  // namespace dmlps::trace
