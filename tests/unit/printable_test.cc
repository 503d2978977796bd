// Text from peers and the environment shown on one line: escapes for
// control characters, short excerpts, and log lines whose message cannot
// start a line of its own.
#include "dmlps/base/printable.h"

#include <doctest/doctest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

namespace dmlps {
namespace {

TEST_CASE("Printable escapes control characters and keeps the rest") {
  CHECK(Printable("worker-7.example.org") == "worker-7.example.org");
  CHECK(Printable("a\nb\rc\td") == "a\\nb\\rc\\td");
  CHECK(Printable(std::string("\x1b[2J\x7f\0", 6)) == "\\x1b[2J\\x7f\\x00");
  CHECK(Printable("caf\xc3\xa9") == "caf\xc3\xa9");  // UTF-8 is kept
  CHECK_FALSE(HasControlCharacters("host-1"));
  CHECK(HasControlCharacters("host\n1"));
  CHECK(HasControlCharacters(std::string("host\0", 5)));
}

TEST_CASE("PrintableExcerpt cuts long text and says how long it was") {
  CHECK(PrintableExcerpt("short", 10) == "short");
  CHECK(PrintableExcerpt(std::string(1000, 'n'), 4) == "nnnn... (1000 bytes)");
  CHECK(PrintableExcerpt("a\nbcdef", 3) == "a\\nb... (7 bytes)");
}

TEST_CASE("a log line's message cannot start a line of its own") {
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>(
      "printable-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_formatter(PrintableLogFormatter("[%l] %v"));
  logger->info("worker 0 joined from {}:{}", "x\n12:00:00.000 dmlps-server: info: forged", 1);
  CHECK(out.str() == "[info] worker 0 joined from x\\n12:00:00.000 dmlps-server: info: forged:1\n");
}

}  // namespace
}  // namespace dmlps
