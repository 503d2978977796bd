// A connected pair of endpoints, for the tests that send real messages.
#ifndef DMLPS_TESTS_UNIT_NET_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_NET_TEST_UTIL_H_

#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"

namespace dmlps::testing {

// A server endpoint bound to `address` (inproc:// keeps the test off the
// network) and a client connected to it, in a context of their own; fails
// the test when either cannot be made.
struct EndpointPair {
  explicit EndpointPair(const std::string& address) {
    Result<net::Endpoint> bound = net::Endpoint::Bind(context, address);
    REQUIRE(bound.ok());
    server.emplace(std::move(bound).value());
    Result<net::Endpoint> connected = net::Endpoint::Connect(context, address);
    REQUIRE(connected.ok());
    client.emplace(std::move(connected).value());
  }

  zmq::context_t context;
  std::optional<net::Endpoint> server;
  std::optional<net::Endpoint> client;
};

// The next message `endpoint` receives within `wait`, decoded; fails the
// test when none comes or it does not decode.
inline proto::Message NextMessage(net::Endpoint& endpoint, std::chrono::milliseconds wait) {
  net::Frames frames;
  Result<bool> got = endpoint.Receive(&frames, wait);
  REQUIRE(got.ok());
  REQUIRE(*got);
  Result<proto::Message> message = proto::DecodeMessage(frames, 0);
  REQUIRE(message.ok());
  return std::move(message).value();
}

}  // namespace dmlps::testing

#endif  // DMLPS_TESTS_UNIT_NET_TEST_UTIL_H_
