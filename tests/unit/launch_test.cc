// Launchers: Slurm host lists, ranks and sizes from the environment, and the
// defaults the binaries take from them.
#include "dmlps/launch/launch.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dmlps::launch {
namespace {

using Hosts = std::vector<std::string>;

Hosts Expand(const std::string& list) {
  Result<Hosts> hosts = ExpandHostList(list);
  REQUIRE_MESSAGE(hosts.ok(), hosts.status().message());
  return *hosts;
}

// An environment made of the given variables only.
EnvLookup Env(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

// The launcher an environment makes DetectLauncher find: `name`, with this
// process as `rank` of `size`. Fails the test when there is none.
Launcher Detected(const std::map<std::string, std::string>& vars, const std::string& name,
                  int64_t rank, int64_t size) {
  Result<Launcher> launcher = DetectLauncher(Env(vars));
  REQUIRE(launcher.ok());
  CHECK(launcher->name == name);
  CHECK(launcher->rank == rank);
  CHECK(launcher->size == size);
  return *launcher;
}

TEST_CASE("Slurm host lists expand in Slurm's order, zero-padded to the first bound") {
  CHECK(Expand("gpu5") == Hosts{"gpu5"});
  CHECK(Expand("node[01-03,07],gpu5") == Hosts{"node01", "node02", "node03", "node07", "gpu5"});
  CHECK(Expand("n[8-11]") == Hosts{"n8", "n9", "n10", "n11"});
  CHECK(Expand("n[08-11]") == Hosts{"n08", "n09", "n10", "n11"});
  CHECK(Expand("n[001-2]") == Hosts{"n001", "n002"});
  CHECK(Expand("a,b[1,3],c") == Hosts{"a", "b1", "b3", "c"});
  CHECK(Expand("rack[1-2]-node[01-02]") ==
        Hosts{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"});
  CHECK(Expand("[1-2]x") == Hosts{"1x", "2x"});
  CHECK(Expand("host-1.example.org") == Hosts{"host-1.example.org"});
  CHECK(Expand("n[0-99999]").size() == 100000);
}

TEST_CASE("malformed host lists are refused, not guessed at") {
  for (const char* bad :
       {"", ",", "a,,b", "a,", "node[", "node]", "node[1-3", "node[]", "node[3-1]", "node[a-b]",
        "node[1-]", "node[-2]", "node[1,,2]", "node[[1]]", "node[1-2][1-2", "a b", "n[0-999999999]",
        "n[0-999]m[0-9999]", "n[1234567890123456789]"}) {
    CAPTURE(bad);
    CHECK_FALSE(ExpandHostList(bad).ok());
  }
}

TEST_CASE("host lists are counted before any is expanded; a hostile one gets one short line") {
  // 12,000 groups of a million numbers each (120 KB): a million names per
  // group, written out before their product was checked, were 32 MB each.
  std::string groups = "n";
  for (int i = 0; i < 12000; ++i) groups += "[0-999999]";
  // A name of 120,000 characters, a million times.
  const std::string long_names = std::string(120000, 'a') + "[0-999999]";
  const std::string wide = std::string(300, 'a');
  for (const std::string& list : {groups, long_names, wide, std::string("n[0-999999999]")}) {
    CAPTURE(list.size());
    for (const Status& s : {ExpandHostList(list).status(), ReadHostList(list).status()}) {
      REQUIRE_FALSE(s.ok());
      CHECK(s.message().find('\n') == std::string::npos);
      CHECK(s.message().size() < 300);
    }
  }
  CHECK(ReadHostList(groups).status().message().find("more than 1000000 hosts") !=
        std::string::npos);
  CHECK(ReadHostList(wide).status().message().find("more than 255 characters") !=
        std::string::npos);
  // What a list names, read without expanding it.
  Result<HostList> read = ReadHostList("rack[1-2]-node[07-09],gpu5");
  REQUIRE(read.ok());
  CHECK(read->count == 7);
  CHECK(read->first == "rack1-node07");
  Result<HostList> most = ReadHostList("n[0-999999]");
  REQUIRE(most.ok());
  CHECK(most->count == 1000000);
  CHECK(most->first == "n0");
  // Whatever the list holds, an error quotes it on one line.
  const Status newline = ReadHostList("a,b\nc").status();
  CHECK(newline.message() == "host list 'a,b\\nc': white space in 'b\\nc'");
}

TEST_CASE("the launcher is Open MPI, PMI or Slurm, in that order of precedence") {
  Result<Launcher> none = DetectLauncher(Env({}));
  REQUIRE(none.ok());
  CHECK(none->name.empty());

  Detected({{"OMPI_COMM_WORLD_RANK", "2"},
            {"OMPI_COMM_WORLD_SIZE", "4"},
            {"SLURM_PROCID", "0"},
            {"SLURM_NTASKS", "1"},
            {"PMI_RANK", "1"},
            {"PMI_SIZE", "3"}},
           "openmpi", 2, 4);
  Detected({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "5"}},
           "pmi", 1, 3);
  const Launcher slurm =
      Detected({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "5"}, {"SLURM_JOB_NODELIST", "c[1-3]"}},
               "slurm", 3, 5);
  CHECK(slurm.hosts.count == 3);
  CHECK(slurm.hosts.first == "c1");
  CHECK(Describe(slurm) == "rank 3 of 5 under slurm on 3 hosts from c1");

  // The step's node list is the one the ranks run on.
  Result<Launcher> step = DetectLauncher(Env({{"SLURM_PROCID", "0"},
                                              {"SLURM_NTASKS", "2"},
                                              {"SLURM_JOB_NODELIST", "c[1-8]"},
                                              {"SLURM_STEP_NODELIST", "c[5-6]"}}));
  REQUIRE(step.ok());
  CHECK(step->hosts.count == 2);
  CHECK(step->hosts.first == "c5");

  // An salloc shell knows the task count but is no task itself.
  Result<Launcher> salloc = DetectLauncher(Env({{"SLURM_NTASKS", "4"}}));
  REQUIRE(salloc.ok());
  CHECK(salloc->name.empty());
}

TEST_CASE("DMLPS_LAUNCHER forces a launcher or none") {
  const std::map<std::string, std::string> both = {{"OMPI_COMM_WORLD_RANK", "1"},
                                                   {"OMPI_COMM_WORLD_SIZE", "2"},
                                                   {"SLURM_PROCID", "4"},
                                                   {"SLURM_NTASKS", "6"}};
  auto with = [&](const std::string& choice) {
    std::map<std::string, std::string> vars = both;
    vars["DMLPS_LAUNCHER"] = choice;
    return DetectLauncher(Env(vars));
  };
  CHECK(with("none")->name.empty());
  CHECK(with("slurm")->rank == 4);
  CHECK(with("openmpi")->rank == 1);
  CHECK(with("auto")->name == "openmpi");
  CHECK_FALSE(with("pmi").ok());  // asked for, not there
  CHECK_FALSE(with("mpich").ok());
}

TEST_CASE("a launcher's bad variables are configuration errors") {
  for (const auto& vars : std::vector<std::map<std::string, std::string>>{
           {{"OMPI_COMM_WORLD_RANK", "1"}},
           {{"PMI_RANK", "x"}, {"PMI_SIZE", "2"}},
           {{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}},
           {{"PMI_RANK", "-1"}, {"PMI_SIZE", "2"}},
           {{"PMI_RANK", "0"}, {"PMI_SIZE", "0"}},
           {{"PMI_RANK", "0"}, {"PMI_SIZE", "2 "}},
           {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n[1-"}}}) {
    Result<Launcher> launcher = DetectLauncher(Env(vars));
    CHECK_FALSE(launcher.ok());
    if (!launcher.ok()) CHECK(launcher.status().code() == StatusCode::kConfig);
  }
}

TEST_CASE("rank 0 is the server; the others are workers 0..SIZE-2 that find it") {
  LaunchDefaults plain = ReadLaunchDefaults(Env({}));
  CHECK(plain.problems.empty());
  CHECK(plain.workers == 0);
  CHECK(plain.worker_rank == -1);
  CHECK(plain.server == "tcp://127.0.0.1:5555");
  CHECK(plain.bind == "tcp://127.0.0.1:5555");

  LaunchDefaults server =
      ReadLaunchDefaults(Env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  CHECK(server.workers == 3);
  CHECK(server.worker_rank == -1);

  LaunchDefaults worker = ReadLaunchDefaults(Env({{"SLURM_PROCID", "3"},
                                                  {"SLURM_NTASKS", "4"},
                                                  {"SLURM_JOB_NODELIST", "gpu[07-08],cpu1"},
                                                  {"DMLPS_PORT", "6000"}}));
  CHECK(worker.problems.empty());
  CHECK(worker.workers == 3);
  CHECK(worker.worker_rank == 2);
  CHECK(worker.server == "tcp://gpu07:6000");
  CHECK(worker.bind == "tcp://127.0.0.1:6000");

  LaunchDefaults given = ReadLaunchDefaults(Env({{"SLURM_PROCID", "1"},
                                                 {"SLURM_NTASKS", "2"},
                                                 {"SLURM_JOB_NODELIST", "gpu07"},
                                                 {"DMLPS_SERVER", "tcp://10.0.0.1:7000"}}));
  CHECK(given.server == "tcp://10.0.0.1:7000");

  LaunchDefaults alone = ReadLaunchDefaults(Env({{"PMI_RANK", "0"}, {"PMI_SIZE", "1"}}));
  CHECK(alone.workers == 0);  // a job of one process has no workers to count

  LaunchDefaults bad =
      ReadLaunchDefaults(Env({{"PMI_RANK", "5"}, {"PMI_SIZE", "2"}, {"DMLPS_PORT", "70000"}}));
  CHECK(bad.problems.size() == 2);
  CHECK(bad.workers == 0);
  CHECK(bad.worker_rank == -1);
  CHECK(bad.server == "tcp://127.0.0.1:5555");
}

TEST_CASE("torchrun's rank comes first and Kubernetes' last; DMLPS_LAUNCHER still forces one") {
  const std::map<std::string, std::string> all = {{"RANK", "1"},
                                                  {"WORLD_SIZE", "2"},
                                                  {"MASTER_ADDR", "10.0.0.9"},
                                                  {"LOCAL_RANK", "1"},
                                                  {"OMPI_COMM_WORLD_RANK", "0"},
                                                  {"OMPI_COMM_WORLD_SIZE", "3"},
                                                  {"SLURM_PROCID", "4"},
                                                  {"SLURM_NTASKS", "6"},
                                                  {"JOB_COMPLETION_INDEX", "5"},
                                                  {"DMLPS_WORLD_SIZE", "8"},
                                                  {"HOSTNAME", "train-5"},
                                                  {"DMLPS_SERVICE", "dmlps"}};
  Detected(all, "torchrun", 1, 2);
  // srun starting one torchrun a node: torchrun's rank is this process's own.
  Detected({{"RANK", "5"},
            {"WORLD_SIZE", "8"},
            {"MASTER_ADDR", "gpu01"},
            {"SLURM_PROCID", "1"},
            {"SLURM_NTASKS", "2"}},
           "torchrun", 5, 8);
  // A pod's index counts only where no launcher runs inside the pod.
  Detected({{"SLURM_PROCID", "4"},
            {"SLURM_NTASKS", "6"},
            {"JOB_COMPLETION_INDEX", "5"},
            {"DMLPS_WORLD_SIZE", "8"},
            {"DMLPS_SERVER", "tcp://x:1"}},
           "slurm", 4, 6);
  struct Forced {
    std::string choice;
    int64_t rank;
    int64_t size;
  };
  for (const Forced& forced : std::vector<Forced>{
           {"torchrun", 1, 2}, {"openmpi", 0, 3}, {"slurm", 4, 6}, {"kubernetes", 5, 8}}) {
    std::map<std::string, std::string> vars = all;
    vars["DMLPS_LAUNCHER"] = forced.choice;
    Detected(vars, forced.choice, forced.rank, forced.size);
  }
}

TEST_CASE("under torchrun the server runs at MASTER_ADDR, at the port above MASTER_PORT") {
  std::map<std::string, std::string> vars = {
      {"RANK", "2"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "29500"}};
  LaunchDefaults worker = ReadLaunchDefaults(Env(vars));
  CHECK(worker.problems.empty());
  CHECK(worker.launcher.server_host == "10.1.2.3");
  CHECK(worker.workers == 3);
  CHECK(worker.worker_rank == 1);
  CHECK(worker.server == "tcp://10.1.2.3:29501");  // torchrun's store holds 29500
  CHECK(worker.bind == "tcp://127.0.0.1:29501");

  // An IPv6 MASTER_ADDR is put in brackets, as ZeroMQ's tcp:// wants it.
  std::map<std::string, std::string> v6 = vars;
  v6["MASTER_ADDR"] = "fd00::17";
  CHECK(ReadLaunchDefaults(Env(v6)).server == "tcp://[fd00::17]:29501");
  v6["MASTER_ADDR"] = "[fd00::17]";
  CHECK(ReadLaunchDefaults(Env(v6)).server == "tcp://[fd00::17]:29501");

  vars["DMLPS_PORT"] = "6000";  // dmlps's own variables beat the launcher's
  CHECK(ReadLaunchDefaults(Env(vars)).server == "tcp://10.1.2.3:6000");
  vars["DMLPS_SERVER"] = "tcp://server:7000";
  CHECK(ReadLaunchDefaults(Env(vars)).server == "tcp://server:7000");

  LaunchDefaults no_port =
      ReadLaunchDefaults(Env({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}}));
  CHECK(no_port.problems.empty());
  CHECK(no_port.workers == 1);
  CHECK(no_port.bind == "tcp://127.0.0.1:5555");
}

TEST_CASE("under Kubernetes the server is the Job's pod of index 0 in the headless Service") {
  LaunchDefaults worker = ReadLaunchDefaults(Env({{"JOB_COMPLETION_INDEX", "12"},
                                                  {"DMLPS_WORLD_SIZE", "16"},
                                                  {"HOSTNAME", "my-job-12"},
                                                  {"DMLPS_SERVICE", "dmlps"}}));
  CHECK(worker.problems.empty());
  CHECK(worker.launcher.name == "kubernetes");
  CHECK(worker.workers == 15);
  CHECK(worker.worker_rank == 11);
  CHECK(worker.server == "tcp://my-job-0.dmlps:5555");
  CHECK(Describe(worker.launcher) == "rank 12 of 16 under kubernetes");

  LaunchDefaults named = ReadLaunchDefaults(Env({{"JOB_COMPLETION_INDEX", "0"},
                                                 {"DMLPS_WORLD_SIZE", "2"},
                                                 {"DMLPS_SERVER", "tcp://10.0.0.1:7000"},
                                                 {"DMLPS_PORT", "7000"}}));
  CHECK(named.problems.empty());
  CHECK(named.workers == 1);
  CHECK(named.server == "tcp://10.0.0.1:7000");
}

TEST_CASE("torchrun's and Kubernetes' bad variables are configuration errors") {
  for (const auto& vars : std::vector<std::map<std::string, std::string>>{
           {{"RANK", "1"}, {"MASTER_ADDR", "a"}},
           {{"RANK", "one"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}},
           {{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}},
           {{"RANK", "0"}, {"WORLD_SIZE", "2"}},
           {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", ""}},
           {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "65535"}},
           {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "x"}},
           {{"JOB_COMPLETION_INDEX", "1"}, {"HOSTNAME", "j-1"}, {"DMLPS_SERVICE", "s"}},
           {{"JOB_COMPLETION_INDEX", "2"},
            {"DMLPS_WORLD_SIZE", "2"},
            {"DMLPS_SERVER", "tcp://a:1"}},
           {{"JOB_COMPLETION_INDEX", "1"}, {"DMLPS_WORLD_SIZE", "2"}, {"HOSTNAME", "j-1"}},
           {{"JOB_COMPLETION_INDEX", "1"},
            {"DMLPS_WORLD_SIZE", "2"},
            {"HOSTNAME", "j-10"},
            {"DMLPS_SERVICE", "s"}},
           {{"JOB_COMPLETION_INDEX", "1"},
            {"DMLPS_WORLD_SIZE", "2"},
            {"HOSTNAME", "-1"},
            {"DMLPS_SERVICE", "s"}}}) {
    Result<Launcher> launcher = DetectLauncher(Env(vars));
    CHECK_FALSE(launcher.ok());
    if (!launcher.ok()) CHECK(launcher.status().code() == StatusCode::kConfig);
  }
}

}  // namespace
}  // namespace dmlps::launch
