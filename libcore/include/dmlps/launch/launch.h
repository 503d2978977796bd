// What a process learns from the launcher that started it (Open MPI's
// mpirun, a PMI launcher such as MPICH's, Slurm's srun): its rank, the job's
// size, the hosts of the job. The binaries take their defaults from it, so
// one command line works under `mpirun -np K` and `srun`; a flag always wins.
//
// The layout is fixed: the process of launcher rank 0 is the server, ranks
// 1..SIZE-1 are workers 0..SIZE-2, and the server runs on the first host of
// Slurm's node list (or on 127.0.0.1 without one).
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
// several brackets in one name multiply. Refuses malformed lists and lists
// of more than a million hosts.
Result<std::vector<std::string>> ExpandHostList(std::string_view list);

// Looks up an environment variable; nullptr when it is unset.
using EnvLookup = std::function<const char*(const char*)>;

// The launcher's view of this process.
struct Launcher {
  std::string name;  // "openmpi", "pmi" or "slurm"; empty: not started by a launcher
  int64_t rank = -1;
  int64_t size = 0;
  std::vector<std::string> hosts;  // Slurm's node list, expanded; empty without one
};

// Reads the launcher's variables. DMLPS_LAUNCHER picks which: auto (the
// default: OMPI_COMM_WORLD_RANK/SIZE, else PMI_RANK/SIZE, else
// SLURM_PROCID/NTASKS, the first whose rank is set), openmpi, pmi, slurm, or
// none (ignore them all). The node list is SLURM_STEP_NODELIST, else
// SLURM_JOB_NODELIST, wherever the rank came from. Half a pair, a number that
// is not one, a rank outside 0..SIZE-1 or a malformed node list is an error.
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
// HOST the first host of the node list (127.0.0.1 without one) and PORT
// DMLPS_PORT (default 5555); the bind address is tcp://127.0.0.1:PORT.
LaunchDefaults ReadLaunchDefaults(const EnvLookup& env);
// The same, from this process's environment.
LaunchDefaults ReadLaunchDefaults();

// One line for the log: "rank 2 of 4 under openmpi", or empty.
std::string Describe(const Launcher& launcher);

}  // namespace dmlps::launch

#endif  // DMLPS_LAUNCH_LAUNCH_H_
