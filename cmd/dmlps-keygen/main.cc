// dmlps-keygen: makes CURVE key pairs for dmlps-server and dmlps-worker.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>
#include <vector>

#include "dmlps/cli/cli.h"
#include "dmlps/net/curve.h"

namespace {

constexpr std::string_view kProgram = "dmlps-keygen";

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options options(
      std::string(kProgram),
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
  dmlps::cli::AddCommonOptions(options);

  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed =
      dmlps::cli::ParseArgs(options, {"Keys", "Common"}, argc, argv, &exit_code);
  if (!parsed) return exit_code;
  dmlps::cli::FlagReader flags(*parsed);
  std::vector<std::string> names;
  if (flags.Has("names")) names = (*parsed)["names"].as<std::vector<std::string>>();
  if (names.empty()) flags.AddProblem("name the key pair to make (NAME.key and NAME.pub)");
  for (const std::string& name : names) {
    if (name.empty() || name.back() == '/') flags.AddProblem("'" + name + "' is not a file name");
  }
  if (!flags.problems().empty()) return dmlps::cli::ReportUsageErrors(kProgram, flags.problems());

  dmlps::cli::SetupLogging(kProgram, *parsed);
  if (dmlps::Status curve = dmlps::net::RequireCurve(); !curve.ok()) {
    return dmlps::cli::ReportError(kProgram, curve);
  }
  const bool force = flags.Has("force");
  for (const std::string& name : names) {
    dmlps::Result<dmlps::net::CurveKeyPair> pair = dmlps::net::GenerateKeyPair();
    if (!pair.ok()) return dmlps::cli::ReportError(kProgram, pair.status());
    if (dmlps::Status written = dmlps::net::WriteKeyPair(*pair, name, force); !written.ok()) {
      return dmlps::cli::ReportError(kProgram, written);
    }
    spdlog::info("wrote {0}.key and {0}.pub", name);
    std::printf("%s\n", pair->public_key.c_str());
  }
  return 0;
}
