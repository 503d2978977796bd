// The server's side of checkpoints: what one records of the run, whether
// one belongs to this run, and the thread that writes them.
#include "server/checkpoint_writer.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "dmlps/server/checkpoint.h"

namespace dmlps::server {
namespace {

// A file name in /tmp of this process's own.
std::string ScratchPath() {
  return "/tmp/dmlps-checkpoint-writer-test." + std::to_string(::getpid()) + ".ckpt";
}

TEST_CASE("checkpoint: a run's state goes in, and a checkpoint of another run is refused") {
  const CheckpointIdentity run{"mlp:16", "lbbsp", "momentum"};
  Checkpoint c = MakeCheckpoint(run, 3, sync::PolicyState{41, 42, {20, 20, 24}}, 12345, 3.25,
                                std::vector<float>(8, 0.5f));
  CHECK(c.model == "mlp:16");
  CHECK(c.policy == "lbbsp");
  CHECK(c.optimizer == "momentum");
  CHECK(c.workers == 3);
  CHECK(c.version == 41);
  CHECK(c.iteration == 42);
  CHECK(c.policy_extra == std::vector<int64_t>{20, 20, 24});
  CHECK(c.samples == 12345);
  CHECK(c.seconds == 3.25);
  CHECK(c.optimizer_state.size() == 8);
  CHECK(c.params == nullptr);
  const sync::PolicyState saved = SavedPolicyState(c);
  CHECK(saved.version == 41);
  CHECK(saved.iteration == 42);
  CHECK(saved.extra == c.policy_extra);

  c.params = std::make_shared<std::vector<float>>(8);
  CHECK(CheckResumable(c, "f", run, 8).ok());
  const Status size = CheckResumable(c, "f", run, 9);
  CHECK(size.code() == StatusCode::kConfig);
  CHECK(size.message() ==
        "f: a checkpoint of model mlp:16 (8 parameters), this run's is mlp:16 (9)");
  CHECK(CheckResumable(c, "f", {"softmax", "lbbsp", "momentum"}, 8).code() == StatusCode::kConfig);
  CHECK(CheckResumable(c, "f", {"mlp:16", "bsp", "momentum"}, 8).message() ==
        "f: a checkpoint of policy lbbsp, this run's is bsp");
  CHECK(CheckResumable(c, "f", {"mlp:16", "lbbsp", "sgd"}, 8).message() ==
        "f: a checkpoint of optimizer momentum, this run's is sgd (see --momentum)");
}

TEST_CASE("checkpoint writer: writes the newest checkpoint handed to it before it stops") {
  const std::string path = ScratchPath();
  CheckpointWriter writer(path);
  Checkpoint c = MakeCheckpoint({"softmax", "bsp", "momentum"}, 1, sync::PolicyState{7, 8, {}}, 64,
                                1.5, std::vector<float>(32, 0.25f));
  c.params = std::make_shared<std::vector<float>>(32, 1.f);
  writer.Submit(c);
  writer.Finish();
  CHECK(writer.written() == 1);
  CHECK(writer.write_ms() >= 0);
  Result<Checkpoint> read = ReadCheckpointFile(path);
  std::remove(path.c_str());
  REQUIRE(read.ok());
  CHECK(read->iteration == c.iteration);
  CHECK(*read->params == *c.params);
  CHECK(read->optimizer_state == c.optimizer_state);
  // Nothing pending: finishing again writes nothing.
  writer.Finish();
  CHECK(writer.written() == 1);

  // A writer that cannot write keeps going, and counts nothing.
  CheckpointWriter broken(path + ".missing/x.ckpt");
  broken.Submit(c);
  broken.Finish();
  CHECK(broken.written() == 0);
}

TEST_CASE("checkpoint writer: waits for the write; one that failed is kept to retry") {
  const std::string folder = ScratchPath() + ".d";
  const std::string path = folder + "/x.ckpt";
  Checkpoint c =
      MakeCheckpoint({"softmax", "bsp", "sgd"}, 1, sync::PolicyState{3, 3, {}}, 32, 1, {});
  c.params = std::make_shared<std::vector<float>>(4, 1.f);
  CheckpointWriter writer(path, /*keep_failed=*/true);
  CHECK(writer.AwaitWritten());  // nothing submitted
  CHECK_FALSE(writer.Retry());
  // Into a folder that is not there yet: the write fails and is kept.
  writer.Submit(c);
  CHECK_FALSE(writer.AwaitWritten());
  CHECK(writer.written() == 0);
  REQUIRE(::mkdir(folder.c_str(), 0700) == 0);
  CHECK(writer.Retry());
  CHECK(writer.AwaitWritten());
  CHECK(writer.written() == 1);
  CHECK_FALSE(writer.Retry());
  Result<Checkpoint> read = ReadCheckpointFile(path);
  REQUIRE(read.ok());
  CHECK(read->version == 3);
  // A newer one replaces the one kept: it is the one worth writing.
  c.version = 4;
  writer.Submit(c);
  CHECK(writer.AwaitWritten());
  writer.Finish();
  CHECK(writer.AwaitWritten());  // the thread is gone: no wait
  CHECK(ReadCheckpointFile(path)->version == 4);
  std::remove(path.c_str());
  ::rmdir(folder.c_str());
}

TEST_CASE("checkpoint: values beyond the bound are refused as a model that cannot train") {
  Checkpoint c = MakeCheckpoint({"softmax", "bsp", "momentum"}, 1, sync::PolicyState{3, 3, {}}, 32,
                                1, {0.5f, -1e12f, 0.f});
  c.params = std::make_shared<std::vector<float>>(std::vector<float>{1.f, -1e12f, 3.f});
  CHECK(CheckTrainable(c, "f", kDefaultResumeMaxValue).ok());  // 1e12 itself is within
  c.params = std::make_shared<std::vector<float>>(std::vector<float>{1.f, -1e30f, 3.f});
  const Status params = CheckTrainable(c, "f", kDefaultResumeMaxValue);
  CHECK(params.code() == StatusCode::kDataLoss);
  CHECK(params.message() ==
        "f: parameter 1 is -1e+30, beyond --resume-max-value 1e+12: a model that cannot train");
  c.params = std::make_shared<std::vector<float>>(3, 1.f);
  c.optimizer_state[1] = -2e12f;
  const Status state = CheckTrainable(c, "f", kDefaultResumeMaxValue);
  CHECK(state.code() == StatusCode::kDataLoss);
  CHECK(state.message().find("f: optimizer state value 1 is -2") == 0);
  // 0: no bound.
  c.params = std::make_shared<std::vector<float>>(3, 3e38f);
  CHECK(CheckTrainable(c, "f", 0).ok());
}

}  // namespace
}  // namespace dmlps::server
