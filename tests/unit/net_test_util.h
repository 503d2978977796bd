// A connected pair of endpoints, for the tests that send real messages.
#ifndef DMLPS_TESTS_UNIT_NET_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_NET_TEST_UTIL_H_

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <zmq.hpp>

#include "dmlps/net/endpoint.h"

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

}  // namespace dmlps::testing

#endif  // DMLPS_TESTS_UNIT_NET_TEST_UTIL_H_
