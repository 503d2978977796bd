// dmlps-bench codec: parses the Codec flags, runs bench::RunCodecBench and
// prints each codec's speed against memcpy on stdout.
#include "dmlps/bench/codec.h"

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/bench/transport/transport.h"
#include "dmlps/cli/bench_programs.h"
#include "dmlps/cli/values.h"

namespace dmlps::bench_cli {

void AddCodecOptions(cxxopts::Options& options) {
  cli::AddFlags(
      options, "Codec",
      {{"codecs",
        "codec: codecs to time, comma-separated: none, fp16, bf16, int8, topk:F (default: "
        "fp16,bf16,int8,topk:0.01); sim and run: codecs to compare, PUSH[/PULL] each, every "
        "policy under each (PUSH alone pulls in --pull-codec)",
        "LIST"},
       {"kernels", "Kernel sets, comma-separated: auto (what this CPU runs), scalar, avx2", "LIST",
        "auto"}});
}

cli::Program ReadCodecFlags(cli::FlagReader& flags) {
  bench::CodecBenchConfig config;
  // --codecs is sim's and run's too, with a meaning of their own: codec's default here.
  if (flags.Has("codecs")) config.codecs = cli::SplitList(flags.String("codecs"));
  config.kernels = cli::SplitList(flags.String("kernels"));
  // --sizes (Transport) and --repeat (Experiment), with codec's own defaults
  // when not given.
  if (flags.Has("sizes")) {
    config.sizes.clear();
    for (const std::string& item : cli::SplitList(flags.String("sizes"))) {
      Result<int64_t> bytes = bench::ParseByteSize(item);
      if (bytes.ok()) {
        config.sizes.push_back(*bytes);
      } else {
        flags.AddProblem("--sizes: " + bytes.status().message());
      }
    }
  }
  if (flags.Has("repeat")) config.repeat = flags.Int("repeat");
  return ProgramFor(flags, std::move(config), bench::ValidateCodecBenchConfig,
                    cli::RunBenchCodecProgram);
}

std::vector<cli::BorrowedFlag> CodecBorrowedFlags() {
  const bench::CodecBenchConfig d;
  std::string sizes;
  for (const int64_t bytes : d.sizes) {
    sizes += (sizes.empty() ? "" : ",") + bench::FormatByteSize(bytes);
  }
  return {{"sizes", sizes}, {"repeat", std::to_string(d.repeat)}};
}

}  // namespace dmlps::bench_cli
