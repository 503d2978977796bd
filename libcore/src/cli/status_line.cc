#include "dmlps/cli/status_line.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>

namespace dmlps::cli {

StatusLine::StatusLine()
    : shown_(isatty(STDERR_FILENO) != 0 && spdlog::should_log(spdlog::level::info)) {}

StatusLine::~StatusLine() { Clear(); }

void StatusLine::Show(const std::string& text) {
  if (!shown_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  drawn_ = true;
  // Back to the line's start, erase it, write; no newline, so the next
  // draw replaces it.
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
}

void StatusLine::Clear() {
  if (!shown_ || !drawn_) return;
  drawn_ = false;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace dmlps::cli
