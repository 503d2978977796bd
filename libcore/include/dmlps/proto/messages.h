// The messages servers and workers exchange. On the wire each is one msgpack
// header frame, [version, type, body-map], followed by zero or more raw
// little-endian float32 payload frames (see codec.h). A large payload may
// instead follow its Push or Model as separate Chunk messages, so that the
// receiver works on the first chunks while the later ones are on the wire.
#ifndef DMLPS_PROTO_MESSAGES_H_
#define DMLPS_PROTO_MESSAGES_H_

#include <cstdint>
#include <msgpack.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dmlps/model/layout.h"
#include "dmlps/optim/settings.h"

namespace dmlps::proto {

// Bumped whenever a header changes incompatibly; peers with another version
// are refused with an Error naming both versions. Version 2 added streamed
// payloads (Chunk messages), version 3 sharded servers (Orders and Slice
// messages, the shard fields of Hello and Welcome), version 4 external
// models and evaluators (the layout, initial values and evaluator fields of
// Hello; Evaluate and Evaluation messages; the admission tickets of Hello,
// Welcome and Orders that let shards beyond 0 admit only shard 0's workers),
// version 5 checkpoints of sharded servers (Order kCheckpoint, the
// resume_version of Welcome), version 6 the server's optimizer in shard 0's
// Welcome to the other shards (optimizer), version 7 the job secret of
// Hello (roles the operator grants), version 9 compressed payloads (the
// push and pull codecs of Welcome; encoded pushes and models: the codec and
// encoded_bytes of Push and Model, see docs/compression.md).
inline constexpr uint32_t kProtocolVersion = 9;

enum class MsgType : uint8_t {
  kHello = 1,        // worker -> server: wants to join
  kWelcome = 2,      // server -> worker: the run's configuration and the worker's rank
  kPull = 3,         // worker -> server: send me the model for my next clock
  kModel = 4,        // server -> worker: the model; payload = parameters
  kPush = 5,         // worker -> server: one step's result; payload = gradient
  kStop = 6,         // server -> worker: the run is over
  kHeartbeat = 7,    // either way: I am alive
  kError = 8,        // either way: your last message was refused, and why
  kContinue = 9,     // server -> worker: push taken; go on (maybe download first, or a token)
  kSyncNow = 10,     // server -> worker: stop after your current chunk and push
  kChunk = 11,       // either way: one piece of a streamed Push or Model payload
  kOrders = 12,      // shard 0 -> other server shards: what to do to their slices, in order
  kSlice = 13,       // server shard -> shard 0: its slice of a snapshot; payload = parameters
  kEvaluate = 14,    // server -> evaluator: evaluate this snapshot; payload = parameters
  kEvaluation = 15,  // evaluator -> server: a snapshot's accuracy and loss
};

std::string_view MsgTypeName(MsgType type);

struct Hello {
  int64_t rank = -1;  // the rank the worker asks for; -1 lets the server choose
  std::string host;
  int64_t pid = 0;
  int64_t threads = 1;
  int64_t max_batch = 0;  // the most samples the worker can take in one step; 0: no cap
  // A server shard registering with shard 0: its index (>= 1), the number
  // of shards it was started for, and the address workers reach it at.
  // -1: a worker.
  int64_t shard = -1;
  int64_t shards = 0;
  std::string address;
  // A worker of an external model (dmlps-server --model external): the
  // tensors of its model, in the order of the flat parameter vector. The
  // server takes the first worker's layout and refuses any other. With
  // num_params > 0 the payload holds that many floats, the model's initial
  // values (the layout's parameter count; used from the first worker only),
  // inline in frames of at most 1 MiB.
  std::vector<model::TensorSpec> layout;
  int64_t num_params = 0;
  // An evaluator, not a worker: it gets Evaluate messages and answers each
  // with an Evaluation; it holds no rank and no policy waits for it.
  bool evaluator = false;
  // A worker's Hello to a server shard beyond 0: the ticket shard 0's
  // Welcome gave it, without which that shard does not admit it. 0: none.
  int64_t ticket = 0;
  // The job secret (net/secret.h), from a peer the operator trusts with a
  // role: the evaluator, the worker announcing an external model, a server
  // shard without CURVE. Empty: none; a worker needs none.
  std::string secret;
  MSGPACK_DEFINE_MAP(rank, host, pid, threads, max_batch, shard, shards, address, layout,
                     num_params, evaluator, ticket, secret);
};

struct Welcome {
  int64_t rank = 0;
  int64_t num_workers = 0;
  std::string model;   // ModelSpec::Name(), e.g. "mlp:128"
  std::string policy;  // e.g. "bsp"
  int64_t batch = 0;   // samples per step on this worker
  int64_t input_dim = 0;
  int64_t classes = 0;
  int64_t num_params = 0;
  int64_t shard_index = 0;
  int64_t shard_count = 1;
  uint64_t seed = 0;       // for the worker's sampling order
  std::string mode;        // how to run steps: sync, chunked, local, local-overlap, token
  int64_t chunk = 0;       // chunked: samples per chunk
  int64_t token_size = 0;  // token: samples per token
  double lr = 0;           // local, local-overlap, local-sgd: the local optimizer's learning rate
  double momentum = 0;     // and its momentum
  // Sharded servers: the address of every server shard (index 0 is the one
  // that sent this) and where their slices of the flat parameter vector
  // begin, plus the end (shards + 1 offsets). Both empty: one server holds
  // the whole model.
  std::vector<std::string> servers;
  std::vector<int64_t> bounds;
  // Sharded servers: a secret for this admission of this worker, which its
  // Hello to every other shard must carry (shard 0 tells them by an Order
  // kAdmit). 0: not sharded.
  int64_t ticket = 0;
  // Sharded servers, to a shard beyond 0: the model version shard 0 went on
  // from (--resume), which that shard's own checkpoint must hold; -1: shard
  // 0 started afresh.
  int64_t resume_version = -1;
  // Shard 0's Welcome to another server shard of an external model: the
  // layout the first worker announced; the payload then holds that shard's
  // slice of the initial values, in frames of at most 1 MiB.
  std::vector<model::TensorSpec> layout;
  // local-sgd: local steps per push (H); 0 in the other modes.
  int64_t local_steps = 0;
  // Shard 0's Welcome to another server shard: the optimizer the server
  // steps the model with, which that shard steps its slice with.
  optim::OptimizerSettings optimizer;
  // An external model's module state (model::TensorSpec::state): the
  // floats that end the flat vector of num_params. A worker pushes its
  // current values there, not a gradient or a delta, and a local step
  // leaves them to the computation. 0: none.
  int64_t num_state = 0;
  // The samples the rank's earlier workers processed: a worker that takes
  // a lost one's rank goes on through the same data order from there
  // rather than repeating its start.
  int64_t samples_done = 0;
  // The job's codecs (compress::CodecName: "none", "int8", "topk:0.01"...):
  // every push the worker sends is encoded in push_codec, and every model
  // after its first since joining comes as a change encoded in pull_codec.
  std::string push_codec = "none";
  std::string pull_codec = "none";
  MSGPACK_DEFINE_MAP(rank, num_workers, model, policy, batch, input_dim, classes, num_params,
                     shard_index, shard_count, seed, mode, chunk, token_size, lr, momentum, servers,
                     bounds, ticket, resume_version, layout, local_steps, optimizer, num_state,
                     samples_done, push_codec, pull_codec);
};

struct Pull {
  int64_t clock = 0;  // pushes this worker has completed = the step it wants to start
  MSGPACK_DEFINE_MAP(clock);
};

struct Model {
  int64_t version = 0;       // applies the server has made to the model
  int64_t num_params = 0;    // floats in the payload
  int64_t batch = 0;         // the worker's batch from now on; 0: unchanged
  int64_t token = -1;        // token to train on this model; -1: none
  int64_t chunks = 0;        // 0: the payload is in this message; K: it follows in K Chunks
  int64_t chunk_floats = 0;  // streamed: floats per Chunk (the last one holds the rest)
  int64_t local_steps = 0;   // local-sgd: local steps per push from now on; 0: unchanged
  // The first model a worker gets after joining: the ModelDigest of the
  // payload when it came inline (streamed: the last Chunk carries it); 0:
  // none. The worker checks it.
  uint64_t digest = 0;
  // An encoded model (Welcome::pull_codec, never the first since joining):
  // the payload is one frame of exactly encoded_bytes bytes, the change
  // from the model the worker holds (the last one it took) encoded in
  // `codec`, which the worker adds into it (compress::DecodeAdd, scale 1);
  // num_params is the dense count, chunks 0. 0: a dense payload.
  std::string codec;
  int64_t encoded_bytes = 0;
  MSGPACK_DEFINE_MAP(version, num_params, batch, token, chunks, chunk_floats, local_steps, digest,
                     codec, encoded_bytes);
};

// One step's result. The payload is the mean gradient over `samples` samples
// computed on the model of `base_version` (local modes: the model delta).
struct Push {
  int64_t clock = 0;         // which of this worker's steps (0-based)
  int64_t base_version = 0;  // version of the model the gradient was computed on
  int64_t batch = 0;         // samples the worker was asked for
  int64_t samples = 0;       // samples it processed
  int64_t num_params = 0;    // floats in the payload
  double loss = 0;           // mean training loss over those samples
  int64_t compute_us = 0;    // computing the gradient
  int64_t straggle_us = 0;   // emulated slowness (sleeping) after computing
  // Of compute_us, the time the computing thread waited for a core (its
  // run delay; 0: none, or unknown): a host with more workers than cores.
  int64_t run_wait_us = 0;
  int64_t wait_us = 0;       // blocked waiting for the server since the last push
  int64_t comm_us = 0;       // sending the previous push (bandwidth cap included)
  double cpu = 0;            // the worker's recent CPU use in cores (read at most every 100 ms)
  int64_t memory_bytes = 0;  // the worker's resident memory
  int64_t chunks = 0;        // 0: the payload is in this message; K: it follows in K Chunks
  int64_t chunk_floats = 0;  // streamed: floats per Chunk (the last one holds the rest)
  // An encoded push (Welcome::push_codec): the payload is one frame of
  // exactly encoded_bytes bytes, num_params floats encoded in `codec`;
  // chunks 0. 0: a dense payload.
  std::string codec;
  int64_t encoded_bytes = 0;
  MSGPACK_DEFINE_MAP(clock, base_version, batch, samples, num_params, loss, compute_us, straggle_us,
                     run_wait_us, wait_us, comm_us, cpu, memory_bytes, chunks, chunk_floats, codec,
                     encoded_bytes);
};

struct Stop {
  std::string reason;
  MSGPACK_DEFINE_MAP(reason);
};

struct Heartbeat {
  int64_t time_us = 0;
  MSGPACK_DEFINE_MAP(time_us);
};

struct Error {
  std::string message;
  bool fatal = false;  // the receiver should give up (e.g. refused to join)
  // server -> worker, with fatal: the server does not know this worker (it
  // restarted, or declared the worker lost); a worker may Hello again.
  bool rejoin = false;
  MSGPACK_DEFINE_MAP(message, fatal, rejoin);
};

// The answer to a push under policies whose workers do not wait for a model.
struct Continue {
  bool download = false;  // pull the model before the next step
  int64_t token = -1;     // the next token to train; -1: none
  int64_t batch = 0;      // the worker's batch from now on; 0: unchanged
  MSGPACK_DEFINE_MAP(download, token, batch);
};

struct SyncNow {
  int64_t round = 0;  // the round (the worker's clock) this applies to
  MSGPACK_DEFINE_MAP(round);
};

// One piece of a streamed payload: the Push or Model before it announced
// `chunks` pieces, sent in order, index 0 first. Payload: exactly one frame
// of that announcement's chunk_floats floats (the last piece: the rest).
// Other messages may come between the pieces.
struct Chunk {
  int64_t index = 0;
  uint64_t digest = 0;  // the last chunk of a Model with a digest: the whole payload's; 0: none
  MSGPACK_DEFINE_MAP(index, digest);
};

// One thing shard 0 tells another server shard to do to its slice. Shard 0
// runs the policy; the others carry out its decisions in the order given,
// so every slice sees the same stages, applies and replies.
struct Order {
  enum Kind : int64_t {
    kStage = 1,       // acc += value * worker's push `clock` (its slice of it)
    kDiscard = 2,     // worker's push `clock` contributes nothing: free it
    kApply = 3,       // optimizer step along value * acc; acc = 0
    kApplyDelta = 4,  // slice += value * acc; acc = 0
    kReply = 5,       // send worker the slice as it stands now (value: the model's version;
                      // clock 1: with its digest, the worker's first model since joining)
    kForget = 6,      // the worker is gone: drop its pushes, stages waiting for them skip
    kSnapshot = 7,    // send shard 0 a Slice of the model as it stands now (value: its id)
    kAdmit = 8,       // shard 0 admitted worker (clock: its ticket); carried out on arrival
    kCheckpoint = 9,  // write the slice to --checkpoint (clock: the model's version, value: the
                      // iteration), once its updates are in
    // --clip-grad-norm across shards: a shard tells shard 0 the sum of
    // squares of its slice of step `clock`'s gradient (kNorm, value: the
    // sum), and shard 0 tells every shard the sum over all slices (kClip,
    // carried out on arrival).
    kNorm = 10,
    kClip = 11,
  };
  int64_t kind = 0;
  int64_t worker = -1;
  int64_t clock = 0;  // Stage, Discard: the push's clock, in the worker's own count
  double value = 0;
  MSGPACK_DEFINE_ARRAY(kind, worker, clock, value);
};

struct Orders {
  std::vector<Order> orders;
  MSGPACK_DEFINE_MAP(orders);
};

// A server shard's slice of one snapshot; payload: its num_params floats.
struct Slice {
  int64_t id = 0;
  int64_t num_params = 0;
  MSGPACK_DEFINE_MAP(id, num_params);
};

// A snapshot for an evaluator; payload: its num_params floats, inline.
struct Evaluate {
  int64_t id = 0;  // echoed by the Evaluation
  int64_t iteration = 0;
  int64_t num_params = 0;
  MSGPACK_DEFINE_MAP(id, iteration, num_params);
};

// An evaluator's result for the snapshot of Evaluate `id`.
struct Evaluation {
  int64_t id = 0;
  double accuracy = 0;  // in [0, 1]
  double loss = 0;      // mean loss, finite and >= 0
  int64_t samples = 0;  // samples evaluated
  MSGPACK_DEFINE_MAP(id, accuracy, loss, samples);
};

// Alternatives in MsgType order: TypeOf relies on it.
using Body = std::variant<Hello, Welcome, Pull, Model, Push, Stop, Heartbeat, Error, Continue,
                          SyncNow, Chunk, Orders, Slice, Evaluate, Evaluation>;

// The type tag of a body.
MsgType TypeOf(const Body& body);

}  // namespace dmlps::proto

#endif  // DMLPS_PROTO_MESSAGES_H_
