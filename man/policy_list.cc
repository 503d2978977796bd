// dmlps-man-policy-list: a man page's scdoc source with its list of
// policies made from their registry, so that no page keeps one by hand.
// Reads the source on stdin and writes it on stdout with the line
// "; @policy-list@" replaced (cli::SplicePolicyList). The build runs it
// (man/CMakeLists.txt); it is not installed.
#include "dmlps/cli/policy_list.h"

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>

int main(int argc, char** argv) {
  namespace cli = dmlps::cli;
  const std::string_view which = argc == 2 ? argv[1] : "";
  if (which != "server" && which != "bench") {
    std::fprintf(stderr, "usage: dmlps-man-policy-list server|bench < PAGE.scd > BUILT.scd\n");
    return cli::kExitUsage;
  }
  const std::string page{std::istreambuf_iterator<char>(std::cin), {}};
  const dmlps::Result<std::string> built = cli::SplicePolicyList(
      page, which == "server" ? cli::PolicyList::kServer : cli::PolicyList::kBench);
  if (!built.ok()) return cli::ReportError("dmlps-man-policy-list", built.status());
  std::cout << *built << std::flush;
  return std::cout.good() ? 0 : dmlps::ExitCodeFor(dmlps::Status::IOError("stdout"));
}
