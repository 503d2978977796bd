// Live progress for a person at a terminal: one line on stderr that
// rewrites itself (which run of how many, the iteration, the accuracy, how
// long; or how many workers have joined). Never on stdout, where the data
// goes, and nothing of it when stderr is not a terminal or when info
// messages are not logged (--quiet): a log file or a pipe gets log lines
// only.
#ifndef DMLPS_CLI_STATUS_LINE_H_
#define DMLPS_CLI_STATUS_LINE_H_

#include <chrono>
#include <string>

namespace dmlps::cli {

class StatusLine {
 public:
  // Shown when stderr is a terminal and info messages are logged.
  StatusLine();
  // Clears what it shows.
  ~StatusLine();
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  // Whether it shows anything here.
  bool shown() const { return shown_; }
  // Replaces the line with `text`, at most every 200 ms (a log line in
  // between erases it: it is drawn again on the next call).
  void Show(const std::string& text);
  // Removes the line, so that what comes next starts on a clean one.
  void Clear();

 private:
  const bool shown_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_STATUS_LINE_H_
