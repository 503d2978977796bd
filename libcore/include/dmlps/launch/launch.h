// What a process learns from the launcher that started it (torchrun, Open
// MPI's mpirun, a PMI launcher such as MPICH's, Slurm's srun, a Kubernetes
// indexed Job): its rank, the job's size, the hosts of the job, where rank 0
// runs. The binaries take their defaults from it, so one command line works
// under `mpirun -np K`, `srun` and `torchrun`; a flag always wins.
//
// The layout is fixed: the process of launcher rank 0 is the server, ranks
// 1..SIZE-1 are workers 0..SIZE-2, and the server runs where the launcher
// says rank 0 runs (torchrun's MASTER_ADDR, the Job's pod of index 0), else
// on the first host of Slurm's node list, else on 127.0.0.1.
#ifndef DMLPS_LAUNCH_LAUNCH_H_
#define DMLPS_LAUNCH_LAUNCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::launch {

// The port of the default addresses when DMLPS_PORT does not give one.
inline constexpr int kDefaultPort = 5555;

// Expands a Slurm host list, e.g. "node[01-03,07],gpu5" into node01 node02
// node03 node07 gpu5: comma-separated items, each a name with bracketed lists
// of numbers and ranges (zero-padded to the width of a range's first bound);
// several brackets in one name multiply. Refuses malformed lists, lists of
// more than a million hosts, host names of more than 255 characters and
// lists that expand to more than 64 MiB of names, in one line quoting at
// most the list's first 60 characters: the whole list is parsed and
// counted before any name is written out.
Result<std::vector<std::string>> ExpandHostList(std::string_view list);

// What a host list names, without expanding it: how many hosts, and the
// first. The same lists are refused as by ExpandHostList, but for their
// expanded size: reading one takes memory in proportion to the list's
// text alone.
struct HostList {
  int64_t count = 0;
  std::string first;
};
Result<HostList> ReadHostList(std::string_view list);

// Looks up an environment variable; nullptr when it is unset.
using EnvLookup = std::function<const char*(const char*)>;

// The launcher's view of this process.
struct Launcher {
  // "torchrun", "openmpi", "pmi", "slurm" or "kubernetes"; empty: not started by a launcher
  std::string name;
  int64_t rank = -1;
  int64_t size = 0;
  HostList hosts;  // Slurm's node list, read (not expanded); count 0 without one
  // Where the launcher says rank 0 runs: torchrun's MASTER_ADDR, or under
  // Kubernetes JOBNAME-0.SERVICE; empty: it does not say.
  std::string server_host;
  // The port the launcher leaves to the server: torchrun's MASTER_PORT + 1
  // (torchrun's own store listens at MASTER_PORT); 0: none.
  int64_t server_port = 0;
};

// Reads the launcher's variables. DMLPS_LAUNCHER picks which: auto (the
// default: the first whose rank is set of torchrun's RANK/WORLD_SIZE,
// OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, SLURM_PROCID/NTASKS and a
// Kubernetes indexed Job's JOB_COMPLETION_INDEX/DMLPS_WORLD_SIZE), torchrun,
// openmpi, pmi, slurm, kubernetes, or none (ignore them all). torchrun comes
// first because it is the innermost launcher when nested (srun or a pod
// starts torchrun, never the other way round), Kubernetes last because a
// pod is the outermost. The node list is SLURM_STEP_NODELIST, else
// SLURM_JOB_NODELIST, wherever the rank came from. torchrun needs
// MASTER_ADDR; under Kubernetes the server is JOBNAME-0.SERVICE, JOBNAME-I
// being the pod's HOSTNAME and SERVICE the headless Service in
// DMLPS_SERVICE, unless DMLPS_SERVER names it. Half a pair, a number that is
// not one, a rank outside 0..SIZE-1, a malformed node list, a missing
// MASTER_ADDR or a Kubernetes job with no way to the server is an error.
Result<Launcher> DetectLauncher(const EnvLookup& env);

// The defaults the binaries take from the environment.
struct LaunchDefaults {
  Launcher launcher;
  int64_t workers = 0;       // the server's worker count: SIZE-1; 0: none from the launcher
  int64_t worker_rank = -1;  // the rank a worker asks for: RANK-1; -1: let the server assign
  std::string server;        // the address a worker connects to
  std::string bind;          // the address the server listens on
  std::vector<std::string> problems;  // one line each; the defaults above then ignore the launcher
};

// The server address is DMLPS_SERVER when set, else tcp://HOST:PORT with
// HOST the launcher's server_host, else the first host of the node list,
// else 127.0.0.1 (an IPv6 address in brackets), and PORT DMLPS_PORT, else the launcher's
// server_port, else 5555; the bind address is tcp://127.0.0.1:PORT. DMLPS_ variables beat the
// launcher's, as flags beat both.
LaunchDefaults ReadLaunchDefaults(const EnvLookup& env);
// The same, from this process's environment.
LaunchDefaults ReadLaunchDefaults();

// One line for the log: "rank 2 of 4 under openmpi", or empty.
std::string Describe(const Launcher& launcher);

}  // namespace dmlps::launch

#endif  // DMLPS_LAUNCH_LAUNCH_H_
