#pragma once
// The round protocol's messages (protocol/messages.h) and the task
// (task/task.h) on the wire, with protobuf-lite (docs/architecture.md,
// "Wire"). Encoding fills an Envelope; decoding validates everything that
// arrives against the wire limits (task/limits.h) once, where it is decoded,
// and yields views into the Envelope and into the decoder's own storage.
// Host and Linux devices; the firmware has the same mapping over nanopb.

#include <cstdint>
#include <vector>

#include "fedrt.pb.h"
#include "fedrt/task/task.h"
#include "fedrt/core/status.h"
#include "fedrt/protocol/messages.h"
#include "fedrt/protocol/server_session.h"
#include "fedrt/wire/frame.h"

namespace fedrt::wire {

// The Error a refused message is answered with (coordinator and gateway alike).
ErrorReason ErrorReasonOf(protocol::Refusal r);

void EncodeTask(const task::Task& in, Task* out);
// Validates ranges (enumerations, counts within the limits, finite numbers).
Status DecodeTask(const Task& in, task::Task& out);

void Encode(const protocol::Announcement& m, Envelope& env);
void Encode(const protocol::Update& m, Envelope& env);
void Encode(const protocol::RoundResult& m, Envelope& env);
void Encode(const protocol::Chunk& m, Envelope& env);
void Encode(const protocol::SecAggAdvertiseMsg& m, Envelope& env);
void Encode(const protocol::SecAggKeysMsg& m, Envelope& env);
// Shares device -> server (each ciphertext names its recipient) or server ->
// device (`incoming`: each names its sender).
void Encode(const protocol::SecAggSharesMsg& m, bool incoming, Envelope& env);
void Encode(const protocol::SecAggMaskedMsg& m, Envelope& env);
void Encode(const protocol::SecAggUnmaskRequestMsg& m, Envelope& env);
// Consistency tags device -> server (SecAggCheck, each names its recipient) or
// server -> device (`incoming`: SecAggChecks, each names its sender).
void Encode(const protocol::SecAggCheckMsg& m, bool incoming, Envelope& env);
void Encode(const protocol::SecAggUnmaskMsg& m, Envelope& env);
// Whichever message the variant holds (false: kind kNone, nothing encoded).
bool Encode(const protocol::ClientMessage& m, Envelope& env);
bool Encode(const protocol::ServerMessage& m, Envelope& env);

// One decoded protocol message. Its views point into the Envelope given to
// decode() (which must outlive them) and into this object.
class Inbound {
 public:
  // The protocol message in `env` (announcement, update, result or a SecAgg+
  // phase); false with `error` when it breaks a limit or is not one of them.
  bool decode(const Envelope& env, WireError& error);

  protocol::MessageKind kind() const { return kind_; }
  const protocol::Announcement& announcement() const { return announcement_; }
  const protocol::Update& update() const { return update_; }
  const protocol::RoundResult& result() const { return result_; }
  const protocol::Chunk& chunk() const { return chunk_; }
  const protocol::SecAggAdvertiseMsg& advertise() const { return advertise_; }
  const protocol::SecAggKeysMsg& keys() const { return keys_; }
  const protocol::SecAggSharesMsg& shares() const { return shares_; }  // kSecAggShares or kSecAggSharesIn
  const protocol::SecAggMaskedMsg& masked() const { return masked_; }
  const protocol::SecAggUnmaskRequestMsg& unmask_request() const { return unmask_request_; }
  const protocol::SecAggCheckMsg& check() const { return check_; }  // kSecAggCheck or kSecAggChecks
  const protocol::SecAggUnmaskMsg& unmask() const { return unmask_; }
  // The message as the protocol's variant of its direction (kind kNone when
  // it is one the other side sends).
  const protocol::ClientMessage& from_device() const { return device_; }
  const protocol::ServerMessage& from_coordinator() const { return server_; }

 private:
  bool map(const Envelope& env, WireError& error);  // the fields alone
  void build_device();       // device_ from the fields (kind kNone unless a device's message)
  void build_coordinator();  // server_, likewise
  protocol::ClientMessage device_;
  protocol::ServerMessage server_;
  protocol::MessageKind kind_ = protocol::MessageKind::kNone;
  protocol::Announcement announcement_;
  protocol::Update update_;
  protocol::RoundResult result_;
  protocol::Chunk chunk_;
  protocol::SecAggAdvertiseMsg advertise_;
  protocol::SecAggKeysMsg keys_;
  protocol::SecAggSharesMsg shares_;
  protocol::SecAggMaskedMsg masked_;
  protocol::SecAggUnmaskRequestMsg unmask_request_;
  protocol::SecAggCheckMsg check_;
  protocol::SecAggUnmaskMsg unmask_;
  std::vector<double> model_;
  std::vector<secagg::Advertise> ads_;
  std::vector<secagg::ShareCiphertext> cts_;
  std::vector<uint32_t> words_;
  std::vector<secagg::UnmaskShare> unmask_shares_;
  std::vector<secagg::ConsistencyTag> tags_;
};

}  // namespace fedrt::wire
