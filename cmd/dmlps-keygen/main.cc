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
      "its .key and the server's .pub. Missing folders are made; when a key file\n"
      "exists (without --force), nothing at all is written.\n"
      "With --secret FILE it writes a job secret instead (mode 0600): give it to\n"
      "dmlps-server and to the processes trusted with a role (--secret FILE or\n"
      "DMLPS_SECRET_FILE).\n");
  options.positional_help("NAME...");
  cli::AddFlags(options, "Keys",
                {{"force", "Replace key files that exist"},
                 {"secret", "Write a job secret to FILE instead of key pairs", "FILE"}});
  options.add_options("Positional")("names", "", cxxopts::value<std::vector<std::string>>());
  options.parse_positional({"names"});
  cli::AddCommonOptions(options);

  auto read_flags = [](cli::FlagReader& flags) -> cli::Program {
    const std::vector<std::string> names = flags.List("names");
    if (flags.Has("secret")) {
      const std::string path = flags.String("secret");
      if (path.empty() || path.back() == '/') flags.AddProblem("--secret needs a file name");
      if (!names.empty()) flags.AddProblem("--secret makes a secret, not key pairs: drop NAME");
      return [path, force = flags.Has("force")] { return cli::RunSecretProgram(path, force); };
    }
    if (names.empty()) flags.AddProblem("name the key pair to make (NAME.key and NAME.pub)");
    for (const std::string& name : names) {
      if (name.empty() || name.back() == '/') flags.AddProblem("'" + name + "' is not a file name");
    }
    return [names, force = flags.Has("force")] { return cli::RunKeygenProgram(names, force); };
  };
  return cli::RunMain(options, {"Keys", "Common"}, argc, argv, read_flags);
}
