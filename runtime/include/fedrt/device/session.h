#pragma once
// The Linux device's task and rounds (device/driver.h): Welcome builds the local
// problem from the task and this device's data (or refuses with the reason);
// round messages go to the device agent (protocol/device_agent.h), whose host
// this is: it gives the session its memory and its saved state, persists the
// state region before every update leaves, logs, and turns each settled
// round (the RoundResult of this device's update) into a RoundReport. Moves
// no bytes itself: replies go through the sender it is given. Host code.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fedrt.pb.h"
#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/device.h"
#include "fedrt/device/driver.h"
#include "fedrt/device/log.h"
#include "fedrt/device/state.h"
#include "fedrt/tls/tls.h"
#include "fedrt/problems/instance.h"
#include "fedrt/protocol/device_agent.h"
#include "fedrt/wire/protobuf_codec.h"

namespace fedrt::net {

// Why the message loop ends: the coordinator's Shutdown (status Ok) or a
// refusal that a new connection cannot mend (status says why).
struct DeviceStop {
  bool stop = false;
  Status status = Status::Ok();
};

class DeviceSession {
 public:
  using Sender = std::function<Status(const wire::Envelope&)>;
  DeviceSession(const DeviceOptions& options, const DeviceLog& log);
  ~DeviceSession();

  // Seeds the SecAgg+ secrets and loads the state directory's saved session.
  Status init();
  // Hello's pending-update fields (an update computed but not seen settled).
  void fill_hello(wire::Hello* hello) const;
  // One message from the coordinator; replies go through `send`.
  Status handle(const wire::Envelope& env, const Sender& send, DeviceStop& stop);
  // The report of a round settled since the last call, if any.
  bool take_settled(RoundReport* report);
  // Whether a Welcome came since the last call, and the heartbeat interval it asked for (ms, 0: none).
  bool take_welcome(uint32_t* heartbeat_ms) {
    const WelcomeSeen w = welcome_;
    welcome_ = WelcomeSeen{};
    *heartbeat_ms = w.heartbeat_ms;
    return w.seen;
  }
  bool settled() const { return settled_; }

 private:
  using Agent = protocol::DeviceAgent<double, protocol::kAllFamilies, DeviceSession>;
  using Session = Agent::Session;
  friend Agent;
  Status send_checked(const wire::Envelope& env);
  Status on_welcome(const wire::Welcome& w, DeviceStop& stop);
  Status refuse(const std::string& why, DeviceStop& stop);
  Status build_instance(const task::Task& task, uint32_t index, std::string* refusal);
  Status on_round_message(const wire::Envelope& env);
  static int Entropy(void* self, uint64_t round_id, uint32_t u, uint8_t* out, size_t n);  // from secrets_

  // The agent's host (protocol/device_agent.h): inline updates up to one chunk.
  static protocol::AgentLimits limits() { return protocol::AgentLimits{}; }
  static const char* WireRefusal(const task::Task& t);
  Arena* session_arena(size_t bytes);
  void session_opened(Session& s, const protocol::RoundId& id);
  bool has_saved(const protocol::RoundId& id) const {
    return saved_ && saved_->algorithm == id.algorithm && saved_->run == id.run;
  }
  uint32_t now_ms() const;
  Status persist(bool durable);
  Status send(const protocol::ClientMessage& m);
  void worked(const protocol::RoundId& id, const protocol::ClientMessage& out, bool again, uint32_t ms);
  void masked(const protocol::RoundId&) {}
  void settled(const protocol::Settled& s);
  void broadcast_received(const protocol::RoundId&, uint64_t, uint32_t) {}
  void upload_done(const protocol::RoundId& id, uint32_t chunks, bool resumed, uint64_t skipped);

  const DeviceOptions& opt_;
  const DeviceLog& log_;
  const Sender* send_ = nullptr;  // during handle()
  TlsRandom secrets_;             // SecAgg+ secrets: CTR-DRBG seeded from the OS
  std::optional<SavedSession> saved_;
  bool has_task_ = false;
  task::Task task_{};
  uint64_t task_print_ = 0;
  uint32_t index_ = 0;
  std::unique_ptr<problems::Instance> owned_instance_;
  const problems::Instance* instance_ = nullptr;
  problems::LocalProblem<double> local_{};
  std::vector<uint8_t> arena_;  // the session's workspace
  std::optional<Arena> session_arena_;
  bool settled_ = false;
  RoundReport settled_report_;
  struct WelcomeSeen {
    bool seen = false;
    uint32_t heartbeat_ms = 0;
  } welcome_;
  wire::Inbound inbound_;
  Agent agent_;
};

}  // namespace fedrt::net
