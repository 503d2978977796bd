// The ZAP handler of a server's ROUTER: decides, at the handshake, which
// connections the ROUTER may ever see. With CURVE it admits only listed
// worker keys; with a connection limit it turns away connections beyond it.
// A refused connection never reaches the ROUTER, so it leaves no state there.
#ifndef DMLPS_NET_GATEKEEPER_H_
#define DMLPS_NET_GATEKEEPER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "dmlps/base/status.h"

namespace dmlps::net {

// ZeroMQ looks for the ZAP handler of a context at this address (RFC 27).
inline constexpr char kZapAddress[] = "inproc://zeromq.zap.01";
// The domain a guarded ROUTER announces, so that ZeroMQ asks the handler
// about plaintext (NULL mechanism) connections too.
inline constexpr char kZapDomain[] = "dmlps";

struct GateRules {
  bool curve = false;                  // admit only CURVE clients whose key is in allowed_keys
  std::set<std::string> allowed_keys;  // Z85 public keys
  int64_t max_connections = 0;         // connections open at once, handshakes included; 0: any
};

class Gatekeeper {
 public:
  // Binds the handler in `context` and reads the events of the monitor at
  // `monitor_address` (which counts open connections). It must exist before
  // the guarded socket binds and outlive it: a context without a handler
  // lets every CURVE key in. Unavailable when another handler is bound.
  static Result<std::unique_ptr<Gatekeeper>> Start(zmq::context_t& context, GateRules rules,
                                                   const std::string& monitor_address);
  ~Gatekeeper();

  Gatekeeper(const Gatekeeper&) = delete;
  Gatekeeper& operator=(const Gatekeeper&) = delete;

  // Connections refused so far.
  int64_t refused() const { return refused_.load(); }

 private:
  Gatekeeper(GateRules rules, zmq::socket_t zap, zmq::socket_t monitor);
  void Loop();
  void DrainMonitor();
  void Answer(std::vector<zmq::message_t>& request);
  // Logs a refusal at warning level once per `peer` (key or address).
  void LogRefusal(const std::string& peer, const std::string& why);

  GateRules rules_;
  zmq::socket_t zap_;
  zmq::socket_t monitor_;
  std::set<int64_t> open_;  // descriptors of the connections open now
  std::set<std::string> logged_;
  std::atomic<int64_t> refused_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace dmlps::net

#endif  // DMLPS_NET_GATEKEEPER_H_
