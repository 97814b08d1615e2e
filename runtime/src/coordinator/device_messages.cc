// The coordinator's handlers of a registered device's messages
// (coordinator/coordinator.h): its answer to the task, its round messages
// and what happens when it sends more than its budget. Every line a device
// can make the coordinator write goes through the bounded refusal log
// (coordinator/refusal_log.h), keyed by reason and device, and every answer
// to a rejected message is charged to the connection's message budget
// (docs/security.md, "Bounds per connection").
#include <fmt/format.h>

#include "coordinator_impl.h"

namespace fedrt::net::detail {


// A device over its message budget (Connection::charge): the message is dropped and counted
// (fedrt_rejected_frames_total{reason="flood"}); one line for the connection's first, within
// the refusal log's quota for the device.
void Coordinator::flooded(Connection& c, const char* what) {
  monitor_->frame_rejected("flood");
  if (c.flooded() != 1) return;
  refused("flood/" + c.identity(),
          "limited device={} peer={} reason=flood: {} beyond network.device_messages_per_s = {} (burst {}): dropped "
          "from now on (counted, not logged), and the connection not read until its budget refills",
          c.identity(), c.peer(), what, opt_.network.device_messages_per_s, opt_.network.device_message_burst);
}

void Coordinator::on_task_reply(Connection& c, const wire::TaskReply& r) {
  const uint32_t agent = static_cast<uint32_t>(c.agent());
  if (registry_.state(agent) != Registry::State::kAwaitingReply) {  // answered and logged within the budget
    if (!c.charge()) return flooded(c, "task replies");
    monitor_->frame_rejected("malformed");
    refused("rejected/malformed/" + c.identity(), "rejected device={} reason=malformed: a second TaskReply",
            c.identity());
    c.send_error(wire::ERROR_MALFORMED, "a TaskReply answers Welcome once", false);
    return;
  }
  if (!r.accepted()) {
    const std::string why = r.reason().substr(0, task::kMaxReasonChars);
    registry_.set_state(agent, Registry::State::kRefused, why);
    monitor_->link(agent, FleetMonitor::Link::kRefused, why);
    (void)store_->upsert_device(c.identity(), agent, "refused: " + why);
    CoordinatorWarn("refused device={} index={} stage=task reason={}", c.identity(), agent, why);
    rounds_.set_refused(agent, now_ms());
    maybe_start(false);
    return;
  }
  registry_.set_state(agent, Registry::State::kReady);
  monitor_->link(agent, FleetMonitor::Link::kConnected);
  CoordinatorLog("ready device={} index={} tls={}", c.identity(), agent, c.tls_session());
  // A device that computed an update whose round has since closed learns the result.
  if (pending_[agent]) {
    wire::Envelope env;
    auto replayed = rounds_.replay(agent, *pending_[agent], env);
    if (replayed.ok() && *replayed) {
      c.send(env);
      CoordinatorLog("replayed result device={} alg={} run={} round={} included={}", c.identity(),
                     pending_[agent]->algorithm, pending_[agent]->run, pending_[agent]->round, env.result().included());
    }
    pending_[agent].reset();
  }
  rounds_.set_connected(agent, true, now_ms());
  maybe_start(false);
}

void Coordinator::on_round_message(Connection& c, const wire::Envelope& env) {
  const uint32_t agent = static_cast<uint32_t>(c.agent());
  // The count of identical rejections, once something else happens.
  auto close_repeats = [&] {
    if (repeated_rejections_[agent] > 0)
      refused("rejected/repeats/" + c.identity(), "rejected device={} {} more times: {}", c.identity(),
              repeated_rejections_[agent], last_rejection_[agent]);
    repeated_rejections_[agent] = 0;
  };
  // A rejection: the same again is counted only; a new one is charged to the connection's
  // budget (over it: dropped unanswered), answered, and logged within its key's quota.
  // `counter`: the rejection's label in the monitor's counts (default: the wire reason).
  auto reject = [&](wire::ErrorReason reason, const std::string& why, const std::string& what,
                    const char* counter = nullptr) {
    const std::string label = counter != nullptr ? counter : wire::ErrorReasonName(reason);
    std::string line = fmt::format("{}reason={}: {}", what, wire::ErrorReasonName(reason), why);
    if (line == last_rejection_[agent]) {  // the same again (the refused update's next chunk): counted only
      ++repeated_rejections_[agent];
      monitor_->frame_rejected(label);
      return;
    }
    if (!c.charge()) return flooded(c, "rejected messages");
    monitor_->frame_rejected(label);
    close_repeats();
    refused(fmt::format("rejected/{}/{}", wire::ErrorReasonName(reason), c.identity()), "rejected device={} {}",
            c.identity(), line);
    last_rejection_[agent] = std::move(line);
    c.send_error(reason, why, false);
  };
  const Registry::State s = registry_.state(agent);
  if (s == Registry::State::kRefused)
    return reject(wire::ERROR_TASK_REFUSED, "this device refused the task", "");
  if (s != Registry::State::kReady)
    return reject(wire::ERROR_NOT_REGISTERED, "answer the task (TaskReply) before taking part in rounds", "");
  wire::WireError err;
  if (!inbound_.decode(env, err)) return reject(err.reason, err.message, "");
  const protocol::MessageKind kind = inbound_.kind();
  protocol::RoundId id{};
  const bool update = kind == protocol::MessageKind::kUpdate || kind == protocol::MessageKind::kChunk;
  if (kind == protocol::MessageKind::kUpdate) id = inbound_.update().id;
  if (kind == protocol::MessageKind::kChunk) id = inbound_.chunk().id;
  const protocol::Verdict v = rounds_.on_message(agent, env, inbound_, now_ms());
  // An unclipped update (DP-FedAvg) or one over robustness.max_update_norm is
  // logged once per device, not once per round.
  const bool per_device = v.refusal == protocol::Refusal::kUnclipped || v.refusal == protocol::Refusal::kOverNorm;
  const std::string where = per_device ? fmt::format("alg={} ", id.algorithm)
                            : update ? fmt::format("alg={} run={} round={} ", id.algorithm, id.run, id.round)
                                     : fmt::format("secagg message={} ", static_cast<int>(env.body_case()));
  if (!v.ok())
    return reject(wire::ErrorReasonOf(v.refusal), v.why, where, v.refusal == protocol::Refusal::kOverNorm ? "update_norm" : nullptr);
  if (!last_rejection_[agent].empty()) {  // accepted: the next rejection is news
    close_repeats();
    last_rejection_[agent].clear();
  }
  if (update && v.whole) {
    wire::Envelope ack;
    ack.mutable_ack()->set_algorithm_index(id.algorithm);
    ack.mutable_ack()->set_run(id.run);
    ack.mutable_ack()->set_round(id.round);
    c.send(ack);
  }
}

}  // namespace fedrt::net::detail
