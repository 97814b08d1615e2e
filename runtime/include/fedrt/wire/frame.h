#pragma once
// Frames on a TLS byte stream (docs/architecture.md, "Wire"): a 4-byte
// big-endian length and one protobuf-lite Envelope of runtime/wire/fedrt.proto,
// and the checks every frame gets where it is decoded. Host and Linux devices.

#include <cstdint>
#include <string>

#include "fedrt.pb.h"
#include "fedrt/task/limits.h"

namespace fedrt::wire {

constexpr uint32_t kProtocolVersion = 3;  // 3: Task.privacy (a version-2 device would not clip)
constexpr size_t kFrameHeaderBytes = 4;  // big-endian uint32 length
// The largest frame body the coordinator takes before a connection's Hello is
// accepted: the longest legal Hello (63-character id, 31-character platform,
// every number at its widest) is 146 bytes (tests/wire/frame_test.cc), so a
// connection that has not registered cannot make the coordinator buffer a
// 16 MiB frame (docs/security.md, "Bounds per connection").
constexpr uint32_t kMaxHelloFrameBytes = 4096;

// A decode failure: the reason code sent back to the peer and a log message.
struct WireError {
  ErrorReason reason = ERROR_UNSPECIFIED;
  std::string message;
};

// Serialises `env` as one frame: 4-byte big-endian length + body.
std::string EncodeFrame(const Envelope& env);

// Incremental frame splitter for a byte stream; O(frame) memory.
class FrameDecoder {
 public:
  void feed(const uint8_t* data, size_t n);
  // Pops the next complete frame body into `body`: 1 when a frame was
  // produced, 0 when more bytes are needed, -1 on a length above the
  // limit, checked before any of the body is waited for (the stream is
  // then unusable; `error` says why).
  int next(std::string& body, WireError& error);
  size_t buffered() const { return buf_.size() - pos_; }
  // The largest frame body accepted from now on (kMaxLinuxFrameBytes unless set).
  void set_limit(uint32_t max_body) { limit_ = max_body; }

 private:
  std::string buf_;
  size_t pos_ = 0;
  uint32_t limit_ = task::kMaxLinuxFrameBytes;
};

// Parses a frame body; fails (ERROR_MALFORMED) on undecodable bytes or an empty envelope.
bool ParseEnvelope(const std::string& body, Envelope& env, WireError& error);
// Checks a Hello: protocol version, id length and characters.
bool ValidateHello(const Hello& hello, WireError& error);
const char* ErrorReasonName(ErrorReason reason);

}  // namespace fedrt::wire
