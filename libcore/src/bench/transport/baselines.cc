#include "bench/transport/baselines.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <zmq.hpp>

#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "server/model_store.h"

namespace dmlps::bench {
namespace {

using std::chrono::milliseconds;

void ConfigureRaw(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, 100000);
  socket.set(zmq::sockopt::rcvhwm, 100000);
  socket.set(zmq::sockopt::maxmsgsize, net::kMaxFrameBytes);
}

// Waits for one frame on a raw socket for at most `timeout`, looking at the
// stop flags every slice.
Status ReceiveRaw(zmq::socket_t& socket, zmq::message_t* frame, milliseconds timeout,
                  Shared& shared, const std::atomic<bool>* quit) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (true) {
    if (shared.Stopping() || (quit != nullptr && quit->load())) return shared.Reason();
    if (Clock::now() >= deadline) {
      return Status::Unavailable(
          fmt::format("no answer from the echo for {:g} s", timeout.count() / 1000.0));
    }
    zmq_pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    const int rc = zmq_poll(&item, 1, static_cast<long>(kSlice.count()));
    if (rc < 0 && zmq_errno() != EINTR) {
      return Status::IOError(std::string("poll failed: ") + zmq_strerror(zmq_errno()));
    }
    if (rc <= 0) continue;
    if (socket.recv(*frame, zmq::recv_flags::dontwait)) return Status::Ok();
  }
}

}  // namespace

Result<std::vector<double>> RawPingPong(const std::string& bind_address, int64_t bytes,
                                        int64_t pieces, const TransportConfig& config,
                                        Shared& shared) {
  try {
    zmq::context_t pong_context(1);
    zmq::context_t ping_context(1);
    zmq::socket_t pong(pong_context, zmq::socket_type::dealer);
    ConfigureRaw(pong);
    pong.bind(bind_address);
    const std::string address = pong.get(zmq::sockopt::last_endpoint);
    zmq::socket_t ping(ping_context, zmq::socket_type::dealer);
    ConfigureRaw(ping);
    ping.connect(address);

    const int64_t total = (config.warmup + config.rounds) * pieces;
    Threads threads;
    threads.Start([&] {
      NameThread("bench-echo");
      try {
        for (int64_t i = 0; i < total; ++i) {
          zmq::message_t frame;
          Status got = ReceiveRaw(pong, &frame, config.timeout, shared, &threads.quit_flag());
          if (!got.ok()) {
            if (!threads.quitting()) shared.Fail(got);
            return;
          }
          if (!pong.send(frame, zmq::send_flags::dontwait)) {
            shared.Fail(Status::Unavailable("the echo's send queue is full"));
            return;
          }
        }
      } catch (const zmq::error_t& e) {
        shared.Fail(FromZmq(e, "echo"));
      }
    });

    std::vector<char> payload(static_cast<size_t>(bytes), 1);
    const int64_t piece_bytes = (bytes + pieces - 1) / pieces;
    std::vector<double> times;
    for (int64_t round = 0; round < config.warmup + config.rounds; ++round) {
      const Clock::time_point start = Clock::now();
      for (int64_t offset = 0; offset < bytes; offset += piece_bytes) {
        const size_t n = static_cast<size_t>(std::min(piece_bytes, bytes - offset));
        // Zero-copy with no free function: the payload outlives the sockets.
        zmq::message_t frame(payload.data() + offset, n, nullptr, nullptr);
        if (!ping.send(frame, zmq::send_flags::dontwait)) {
          return Status::Unavailable("the ping's send queue is full");
        }
      }
      for (int64_t p = 0; p < pieces; ++p) {
        zmq::message_t frame;
        DMLPS_RETURN_IF_ERROR(ReceiveRaw(ping, &frame, config.timeout, shared, nullptr));
      }
      if (round >= config.warmup) times.push_back(Millis(Clock::now() - start));
    }
    threads.JoinAll();
    if (shared.Stopping()) return shared.Reason();
    return times;
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "raw ZeroMQ on " + bind_address);
  }
}

std::vector<double> MemcpyTimes(int64_t bytes, const TransportConfig& config) {
  std::vector<char> from(static_cast<size_t>(bytes), 1);
  std::vector<char> to(static_cast<size_t>(bytes), 0);
  std::vector<double> times;
  for (int64_t round = 0; round < config.warmup + config.rounds; ++round) {
    const Clock::time_point start = Clock::now();
    std::memcpy(to.data(), from.data(), from.size());
    if (round >= config.warmup) times.push_back(Millis(Clock::now() - start));
  }
  return times;
}

Result<std::vector<double>> SumTimes(int64_t bytes, int64_t threads,
                                     const TransportConfig& config) {
  const int64_t floats = bytes / static_cast<int64_t>(sizeof(float));
  server::ModelStore store(std::vector<float>(static_cast<size_t>(floats), 0.f),
                           ChunkBytes(config, bytes) / static_cast<int64_t>(sizeof(float)),
                           threads);
  auto values =
      std::make_shared<const std::vector<float>>(static_cast<size_t>(floats), kGradientValue);
  net::Frames frames;
  proto::AppendRange(values, 0, floats, &frames);
  DMLPS_ASSIGN_OR_RETURN(proto::IncomingTensor opened,
                         proto::IncomingTensor::Open(floats, 0, 0, std::move(frames)));
  auto gradient = std::make_shared<proto::IncomingTensor>(std::move(opened));
  std::vector<double> times;
  for (int64_t round = 0; round < config.warmup + config.rounds; ++round) {
    const Clock::time_point start = Clock::now();
    store.Stage(gradient, 0.5f);
    if (round >= config.warmup) times.push_back(Millis(Clock::now() - start));
  }
  if (store.pending() != 0) return Status::Internal("the staging sum did not run at once");
  return times;
}

}  // namespace dmlps::bench
