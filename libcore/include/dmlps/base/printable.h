// Text from elsewhere (a peer, the environment, a file) shown on one line:
// its control characters written as escapes, so that a log line or a
// one-line error quoting it stays one line and moves no terminal's cursor.
#ifndef DMLPS_BASE_PRINTABLE_H_
#define DMLPS_BASE_PRINTABLE_H_

#include <spdlog/formatter.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace dmlps {

// Whether `text` holds a control character: a byte below 0x20, or 0x7f.
bool HasControlCharacters(std::string_view text);

// `text` with each control character written as an escape: \n, \r, \t,
// else \xNN (two hex digits). Other bytes are kept as they are.
std::string Printable(std::string_view text);

// Printable of `text`'s first `max` bytes, and where it is longer "..."
// and how many bytes it has: "node[0-9]... (120000 bytes)".
std::string PrintableExcerpt(std::string_view text, size_t max);

// A log formatter of spdlog's `pattern` whose message (%v) is Printable.
std::unique_ptr<spdlog::formatter> PrintableLogFormatter(const std::string& pattern);

}  // namespace dmlps

#endif  // DMLPS_BASE_PRINTABLE_H_
