#include "server/push_intake.h"

#include <string>

namespace dmlps::server {

void PushIntake::Push(int64_t rank, const proto::Push& push, net::Frames& payload) {
  Member& member = members_.at(rank);
  const std::string who = "worker " + std::to_string(rank);
  if (!driver_.started()) {
    refusals_.Refuse(member.identity, who, "push before training started", false);
    return;
  }
  if (HasNegativeCounts(push)) {
    refusals_.Refuse(member.identity, who, "push with a negative count or time", false);
    return;
  }
  if (HasImplausibleCounts(push)) {
    refusals_.Refuse(member.identity, who, "push with a count or time beyond any run", false);
    return;
  }
  // A payload that cannot be used still ends the worker's step, so that one
  // bad push cannot stall the others; it just contributes nothing.
  sync::PushInfo info = PushInfoOf(push, member.replied_at, Clock::now());
  if (streams_.open(rank)) {
    Abandon(rank, "push " + std::to_string(streams_.clock(rank)) +
                      " broken off by the next push; its missing chunks are left out");
  }
  // A streamed gradient is checked chunk by chunk as it arrives (Chunk);
  // one that came whole is checked now.
  OpenedPush opened = OpenPush(push, store_.size(), "the model", payload, codec_);
  if (opened.fault == OpenedPush::kNone && max_push_samples_ > 0) {
    // A push weighs its samples: one claiming more than its worker was
    // given would outweigh the others' real work.
    auto given = batch_given_.find(rank);
    const int64_t cap = given != batch_given_.end() ? given->second : max_push_samples_;
    if (push.samples > cap) {
      opened.fault = OpenedPush::kLayout;
      opened.why = "push claims " + std::to_string(push.samples) + " samples, more than the " +
                   std::to_string(cap) + " it was given";
    }
  }
  if (opened.fault == OpenedPush::kNone) {
    // Its chunks follow, if streamed. (A streamed push refused here has the
    // wrong size: its chunks are refused one by one rather than held.)
    streams_.Follow(rank, opened.tensor, push.clock);
  } else {
    opened.tensor.reset();
    info.usable = false;
    ++member.totals.refused;
    refusals_.Refuse(member.identity, who, opened.why + "; step counted, gradient ignored", false);
  }

  if (tracer_) {
    tracer_->Instant("comm", "push", trace::NowMicros(),
                     {{"worker", rank},
                      {"clock", push.clock},
                      {"samples", push.samples},
                      {"staleness", driver_.policy().version() - push.base_version}});
  }
  const sync::PushOutcome outcome = driver_.Push(rank, info, opened.tensor);
  // The worker spent the time whether or not its push is used.
  sync::WorkerTotals& totals = member.totals;
  ++totals.steps;
  totals.compute_s += push.compute_us * 1e-6;
  totals.straggle_s += push.straggle_us * 1e-6;
  totals.wait_s += push.wait_us * 1e-6;
  totals.samples += outcome.samples;
  // The other shards free their slice of a push this one does not stage.
  if (!outcome.staged) shards_.Order({proto::Order::kDiscard, rank, push.clock, 0});
  driver_.Advance();
}

void PushIntake::Chunk(int64_t rank, const proto::Chunk& chunk, net::Frames& payload) {
  Member& member = members_.at(rank);
  const PushStreams::Taken taken = streams_.Take(rank, chunk.index, payload);
  if (taken.verdict == PushStreams::Verdict::kNoStream) {
    refusals_.Refuse(member.identity, "worker " + std::to_string(rank), taken.why, false);
    return;
  }
  if (taken.verdict != PushStreams::Verdict::kTaken) ++member.totals.refused;
  if (taken.verdict == PushStreams::Verdict::kBroken) {
    Abandon(rank, taken.why + "; the rest of its gradient is left out");
    return;
  }
  if (taken.verdict == PushStreams::Verdict::kNonFinite) {
    refusals_.Refuse(member.identity, "worker " + std::to_string(rank),
                     taken.why + "; that chunk is left out", false);
  }
  store_.Advance();
}

void PushIntake::CloseStalled() {
  for (const int64_t rank : streams_.StalledAt(Clock::now(), kStreamStall)) {
    Abandon(rank, "push " + std::to_string(streams_.clock(rank)) + ": no chunk for " +
                      std::to_string(kStreamStall.count() / 1000) +
                      " s; the rest of its gradient is left out");
  }
}

void PushIntake::Abandon(int64_t rank, const std::string& why) {
  refusals_.Refuse(members_.at(rank).identity, "worker " + std::to_string(rank), why, false);
  streams_.Close(rank);
  store_.Advance();
}

void PushIntake::Forget(int64_t rank) {
  if (streams_.Close(rank)) store_.Advance();
}

}  // namespace dmlps::server
