#pragma once
// The device driver's task and rounds (net/device.h): Welcome builds the local
// problem from the task and this device's data (or refuses with the reason),
// round messages go to the client session (protocol/client_session.h), its
// state region is persisted before every update leaves, and each settled
// round (the RoundResult of this device's update) becomes a RoundReport.
// Moves no bytes itself: replies go through the sender it is given. Host code.

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
#include "fedrt/net/device.h"
#include "fedrt/net/device_log.h"
#include "fedrt/net/device_state.h"
#include "fedrt/net/tls.h"
#include "fedrt/problems/instance.h"
#include "fedrt/protocol/client_session.h"
#include "fedrt/wire/codec.h"

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
  bool settled() const { return settled_; }

 private:
  using Session = protocol::ClientSession<double>;
  Status send_checked(const wire::Envelope& env);
  Status on_welcome(const wire::Welcome& w, DeviceStop& stop);
  Status refuse(const std::string& why, DeviceStop& stop);
  Status build_instance(const task::Task& task, uint32_t index, std::string* refusal);
  Status ensure_session(const protocol::RoundId& id);
  Status on_round_message(const wire::Envelope& env);
  Status on_announcement(const protocol::Announcement& a);
  Status send_output(const protocol::ClientOutput& out);
  // Chunked transfer (device_chunks.cc): a broadcast received in chunks
  // straight into the session, and updates sent in chunks.
  Status begin_broadcast(const wire::Envelope& env);
  Status on_chunk(const protocol::Chunk& c);
  Status send_update(const protocol::Update& u);
  Status persist(bool durable);
  void settle(const protocol::RoundResult& r);
  static int Entropy(void* ctx, uint64_t round_id, uint32_t u, uint8_t* out, size_t n);

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
  std::vector<uint8_t> arena_;
  std::unique_ptr<Session> session_;
  uint32_t work_ms_ = 0;  // the last local work's wall time (the update's report)
  protocol::RoundId work_id_{};
  protocol::WorkReport work_report_{};  // what the last update reported
  bool settled_ = false;
  RoundReport settled_report_;
  wire::Inbound inbound_;
  wire::Envelope chunked_announce_;  // the header of the broadcast being received in chunks
  bool receiving_ = false;
  uint64_t received_ = 0;
  bool resume_ = false;  // the announcement being answered asked to resume a cut-off upload
  uint64_t resume_bytes_[task::kMaxSegments] = {};
};

}  // namespace fedrt::net
