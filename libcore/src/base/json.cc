#include "dmlps/base/json.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>

namespace dmlps {

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  return fmt::format("{}", value);
}

void WriteJsonString(std::string_view text, std::ostream& out) {
  out << '"';
  for (const char c : text) {
    switch (c) {
      case '"':
        out << "\\\"";
        break;
      case '\\':
        out << "\\\\";
        break;
      case '\n':
        out << "\\n";
        break;
      case '\r':
        out << "\\r";
        break;
      case '\t':
        out << "\\t";
        break;
      case '\b':
        out << "\\b";
        break;
      case '\f':
        out << "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out << fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out << c;
        }
    }
  }
  out << '"';
}

void WriteJsonStringOrNull(std::string_view text, std::ostream& out) {
  if (text.empty()) {
    out << "null";
  } else {
    WriteJsonString(text, out);
  }
}

}  // namespace dmlps
