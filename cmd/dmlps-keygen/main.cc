// dmlps-keygen: makes CURVE key pairs for dmlps-server and dmlps-worker.
#include <string>
#include <vector>

#include "dmlps/cli/cli.h"
#include "dmlps/cli/programs.h"

int main(int argc, char** argv) {
  namespace cli = dmlps::cli;
  cxxopts::Options options(
      std::string(cli::kKeygenProgram),
      "Makes a CURVE key pair for each NAME: NAME.key (the secret key, mode 0600)\n"
      "and NAME.pub (the public key), and prints each public key on stdout. Give\n"
      "the server its .key and a folder of the workers' .pub files, each worker\n"
      "its .key and the server's .pub.\n");
  options.positional_help("NAME...");
  options.add_options("Keys")
      ("force", "Replace key files that exist");
  options.add_options("Positional")
      ("names", "", cxxopts::value<std::vector<std::string>>());
  options.parse_positional({"names"});
  cli::AddCommonOptions(options);

  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed =
      cli::ParseArgs(options, {"Keys", "Common"}, argc, argv, &exit_code);
  if (!parsed) return exit_code;
  cli::FlagReader flags(*parsed);
  const std::vector<std::string> names = flags.List("names");
  if (names.empty()) flags.AddProblem("name the key pair to make (NAME.key and NAME.pub)");
  for (const std::string& name : names) {
    if (name.empty() || name.back() == '/') flags.AddProblem("'" + name + "' is not a file name");
  }
  if (!flags.problems().empty()) return cli::ReportUsageErrors(cli::kKeygenProgram, flags.problems());

  cli::SetupLogging(cli::kKeygenProgram, *parsed);
  return cli::RunKeygenProgram(names, flags.Has("force"));
}
