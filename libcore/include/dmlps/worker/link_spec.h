// How a worker or an evaluator reaches its server: the address, the
// timeouts and heartbeat of the link, and what it presents (CURVE keys, the
// job secret). Held as `link` by WorkerConfig and EvaluatorConfig, so that
// both, dmlps-worker's Cluster flags and the Python classes' keyword
// arguments read and check these settings the same way.
#ifndef DMLPS_WORKER_LINK_SPEC_H_
#define DMLPS_WORKER_LINK_SPEC_H_

#include <chrono>
#include <string>

namespace dmlps::worker {

struct LinkSpec {
  std::string server = "tcp://127.0.0.1:5555";
  std::chrono::milliseconds connect_timeout{10000};  // for the server's Welcome
  // The server silent this long counts as gone: a worker reconnects
  // (WorkerConfig::reconnect_timeout), an evaluator gives up.
  std::chrono::milliseconds server_timeout{30000};
  std::chrono::milliseconds heartbeat{1000};  // between heartbeats to the server
  std::string curve_secret;                   // this peer's secret key file; empty: plaintext
  std::string curve_server_key;               // the server's public key, inline (Z85) or a file
  // The job secret's file (net/secret.h), presented in the Hello: the
  // server asks it of its evaluator and of the worker announcing an
  // external model. Empty: DMLPS_SECRET_FILE's, if set.
  std::string secret_file;
};

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_LINK_SPEC_H_
