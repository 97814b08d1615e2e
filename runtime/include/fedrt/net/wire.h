#pragma once
// Wire format (runtime/wire/fedrt.proto): length-prefixed frames of
// protobuf-lite Envelopes, and decode-side validation of everything that
// arrives from the network (DESIGN.md 4: validated once, where decoded).

#include <cstdint>
#include <string>
#include <vector>

#include "fedrt/core/status.h"
#include "fedrt.pb.h"

namespace fedrt::net {

constexpr uint32_t kProtocolVersion = 1;
constexpr uint32_t kMaxFrameBytes = 64 * 1024;  // largest accepted frame body (bytes)
constexpr int kMaxDim = 256;                    // largest model dimension d on the wire
constexpr size_t kMaxIdChars = 63;              // device ids
constexpr size_t kFrameHeaderBytes = 4;         // big-endian uint32 length

// A decode failure: the reason code sent back to the peer and a log message.
struct WireError {
  wire::ErrorReason reason = wire::ERROR_UNSPECIFIED;
  std::string message;
};

// Serialises `env` as one frame: 4-byte big-endian length + body.
std::string EncodeFrame(const wire::Envelope& env);

// Incremental frame splitter for a byte stream; O(frame) memory.
class FrameDecoder {
 public:
  // Appends received bytes.
  void feed(const uint8_t* data, size_t n);
  // Pops the next complete frame body into `body`: returns 1 when a frame was
  // produced, 0 when more bytes are needed, -1 on a length above
  // kMaxFrameBytes (the stream is then unusable; `error` says why).
  int next(std::string& body, WireError& error);
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
};

// Parses a frame body; fails (ERROR_MALFORMED) on undecodable bytes or an empty envelope.
bool ParseEnvelope(const std::string& body, wire::Envelope& env, WireError& error);

// Raw float64 payload (encoding 0): d little-endian doubles.
std::string EncodeRawPayload(const double* values, int dim);
// Checks size (== 8 d bytes, ERROR_DIMENSION) and finiteness (ERROR_NON_FINITE).
bool DecodeRawPayload(const std::string& payload, int dim, std::vector<double>& out, WireError& error);
// Checks a model vector (announcement / result): exactly `dim` finite values.
bool ValidateModel(const google::protobuf::RepeatedField<double>& model, int dim, std::vector<double>& out,
                   WireError& error);

// Checks a Hello: protocol version, id length and characters.
bool ValidateHello(const wire::Hello& hello, WireError& error);

const char* ErrorReasonName(wire::ErrorReason reason);

}  // namespace fedrt::net
