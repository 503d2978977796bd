#include "dmlps/base/printable.h"

#include <spdlog/pattern_formatter.h>

#include <algorithm>

namespace dmlps {
namespace {

bool IsControl(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

// Writes the message of each log line as Printable: the %v of
// PrintableLogFormatter's pattern.
class PrintableMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm& /*time*/,
              spdlog::memory_buf_t& dest) override {
    const std::string_view text(msg.payload.data(), msg.payload.size());
    if (!HasControlCharacters(text)) {
      dest.append(text.data(), text.data() + text.size());
      return;
    }
    const std::string printable = Printable(text);
    dest.append(printable.data(), printable.data() + printable.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<PrintableMessage>();
  }
};

}  // namespace

bool HasControlCharacters(std::string_view text) {
  return std::any_of(text.begin(), text.end(), IsControl);
}

std::string Printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (!IsControl(c)) {
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      const auto byte = static_cast<unsigned char>(c);
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  return out;
}

std::string PrintableExcerpt(std::string_view text, size_t max) {
  if (text.size() <= max) return Printable(text);
  return Printable(text.substr(0, max)) + "... (" + std::to_string(text.size()) + " bytes)";
}

std::unique_ptr<spdlog::formatter> PrintableLogFormatter(const std::string& pattern) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  // A flag of one's own comes before spdlog's own of the same letter.
  formatter->add_flag<PrintableMessage>('v').set_pattern(pattern);
  return formatter;
}

}  // namespace dmlps
