#include "fedrt/wire/frame.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include <fmt/format.h>

namespace fedrt::wire {

std::string EncodeFrame(const Envelope& env) {
  const std::string body = env.SerializeAsString();
  std::string out(kFrameHeaderBytes + body.size(), '\0');
  const uint32_t n = static_cast<uint32_t>(body.size());
  out[0] = static_cast<char>((n >> 24) & 0xFF);
  out[1] = static_cast<char>((n >> 16) & 0xFF);
  out[2] = static_cast<char>((n >> 8) & 0xFF);
  out[3] = static_cast<char>(n & 0xFF);
  std::memcpy(&out[kFrameHeaderBytes], body.data(), body.size());
  return out;
}

void FrameDecoder::feed(const uint8_t* data, size_t n) {
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  buf_.append(reinterpret_cast<const char*>(data), n);
}

int FrameDecoder::next(std::string& body, WireError& error) {
  if (buffered() < kFrameHeaderBytes) return 0;
  const auto* p = reinterpret_cast<const uint8_t*>(buf_.data() + pos_);
  const uint32_t n = (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
  if (n > limit_) {
    error = {ERROR_FRAME_TOO_LARGE, fmt::format("frame length {} exceeds the maximum of {} bytes{}", n, limit_,
                                                limit_ < task::kMaxLinuxFrameBytes ? " before registration" : "")};
    return -1;
  }
  if (buffered() < kFrameHeaderBytes + n) return 0;
  body.assign(buf_.data() + pos_ + kFrameHeaderBytes, n);
  pos_ += kFrameHeaderBytes + n;
  if (pos_ > 4096 && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  return 1;
}

bool ParseEnvelope(const std::string& body, Envelope& env, WireError& error) {
  if (!env.ParseFromString(body)) {
    error = {ERROR_MALFORMED, fmt::format("undecodable message ({} bytes)", body.size())};
    return false;
  }
  if (env.body_case() == Envelope::BODY_NOT_SET && env.gateway().empty()) {
    error = {ERROR_MALFORMED, "empty or unknown message"};
    return false;
  }
  if (env.body_case() != Envelope::BODY_NOT_SET && !env.gateway().empty()) {
    error = {ERROR_MALFORMED, "a message and a gateway-link message in one envelope"};
    return false;
  }
  return true;
}

bool ValidateHello(const Hello& hello, WireError& error) {
  if (hello.protocol_version() != kProtocolVersion) {
    error = {ERROR_PROTOCOL_VERSION, fmt::format("protocol version {} (this coordinator speaks {})",
                                                 hello.protocol_version(), kProtocolVersion)};
    return false;
  }
  const uint32_t chunk = hello.max_chunk_bytes();
  if (chunk != 0 && (chunk < task::kMinChunkBytes || chunk % 8 != 0)) {
    error = {ERROR_MALFORMED, fmt::format("max_chunk_bytes {}: 0 (the default) or a multiple of 8 of at least {}", chunk,
                                          task::kMinChunkBytes)};
    return false;
  }
  const std::string& platform = hello.platform();
  if (platform.size() > task::kMaxPlatformChars ||
      !std::all_of(platform.begin(), platform.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
      })) {
    error = {ERROR_MALFORMED, fmt::format("platform of {} characters: at most {} of [A-Za-z0-9._-]", platform.size(),
                                          task::kMaxPlatformChars)};
    return false;
  }
  const std::string& id = hello.device_id();
  if (id.empty() || id.size() > task::kMaxIdChars) {
    error = {ERROR_IDENTITY, fmt::format("device id of {} characters (1..{} allowed)", id.size(), task::kMaxIdChars)};
    return false;
  }
  for (char ch : id) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')) {
      error = {ERROR_IDENTITY, "device id has characters outside [A-Za-z0-9._-]"};
      return false;
    }
  }
  return true;
}

const char* ErrorReasonName(ErrorReason reason) {
  switch (reason) {
    case ERROR_UNSPECIFIED: return "unspecified";
    case ERROR_PROTOCOL_VERSION: return "protocol_version";
    case ERROR_MALFORMED: return "malformed";
    case ERROR_FRAME_TOO_LARGE: return "frame_too_large";
    case ERROR_IDENTITY: return "identity";
    case ERROR_DIMENSION: return "dimension";
    case ERROR_NON_FINITE: return "non_finite";
    case ERROR_STALE_ROUND: return "stale_round";
    case ERROR_FUTURE_ROUND: return "future_round";
    case ERROR_DUPLICATE: return "duplicate";
    case ERROR_NOT_SAMPLED: return "not_sampled";
    case ERROR_NOT_REGISTERED: return "not_registered";
    case ERROR_CONFIG_MISMATCH: return "config_mismatch";
    case ERROR_ALREADY_CONNECTED: return "already_connected";
    case ERROR_TASK_REFUSED: return "task_refused";
    case ERROR_CHUNK: return "chunk";
    default: return "unknown";
  }
}

}  // namespace fedrt::wire
