// The two pieces of JSON writing every tool needs; the tools write their
// objects themselves, field by field.
#ifndef DMLPS_BASE_JSON_H_
#define DMLPS_BASE_JSON_H_

#include <ostream>
#include <string>
#include <string_view>

namespace dmlps {

// The shortest text that reads back as the same double; "null" for infinities
// and NaN, which JSON cannot spell.
std::string JsonNumber(double value);

// Writes `text` as a JSON string literal, quotes included, with quotes,
// backslashes and control characters escaped.
void WriteJsonString(std::string_view text, std::ostream& out);

// The same, but null for an empty text: reports write "no value" that way.
void WriteJsonStringOrNull(std::string_view text, std::ostream& out);

}  // namespace dmlps

#endif  // DMLPS_BASE_JSON_H_
