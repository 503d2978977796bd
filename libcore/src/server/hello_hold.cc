#include "server/hello_hold.h"

#include <string>

#include "dmlps/net/endpoint.h"
#include "server/loop.h"

namespace dmlps::server {

int64_t HelloHold::HeldBytes(const proto::Hello& hello) {
  int64_t bytes = kHeldHelloBytes + static_cast<int64_t>(hello.host.size() + hello.address.size() +
                                                         hello.secret.size());
  for (const model::TensorSpec& t : hello.layout) {
    bytes += static_cast<int64_t>(sizeof(t) + t.name.size() + t.shape.size() * sizeof(int64_t));
  }
  return bytes;
}

Status HelloHold::Hold(const zmq::message_t& identity, proto::Hello hello, net::Sender sender) {
  const std::string id = IdentityKey(identity);
  std::erase_if(held_, [&](const Held& h) {
    const bool same =
        IdentityKey(h.identity) == id ||
        (hello.rank >= 0 && h.hello.rank == hello.rank && h.hello.shard < 0 && hello.shard < 0);
    if (same) bytes_ -= HeldBytes(h.hello);
    return same;
  });
  const int64_t bytes = HeldBytes(hello);
  if (size() >= max_hellos_ || bytes_ + bytes > max_bytes_) {
    return Status::Unavailable(
        "the server holds " + std::to_string(size()) +
        " Hellos waiting to be answered, the most it holds; try again later");
  }
  bytes_ += bytes;
  held_.push_back({net::CopyFrame(identity), std::move(hello), std::move(sender)});
  return Status::Ok();
}

bool HelloHold::Holds(const zmq::message_t& identity) const {
  const std::string id = IdentityKey(identity);
  for (const Held& h : held_) {
    if (IdentityKey(h.identity) == id) return true;
  }
  return false;
}

std::vector<HelloHold::Held> HelloHold::Take() {
  std::vector<Held> out;
  out.swap(held_);
  bytes_ = 0;
  return out;
}

}  // namespace dmlps::server
