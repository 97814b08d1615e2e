#include "fedrt/net/wire.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace fedrt::net {

std::string EncodeFrame(const wire::Envelope& env) {
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
  if (n > kMaxFrameBytes) {
    error = {wire::ERROR_FRAME_TOO_LARGE,
             fmt::format("frame length {} exceeds the maximum of {} bytes", n, kMaxFrameBytes)};
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

bool ParseEnvelope(const std::string& body, wire::Envelope& env, WireError& error) {
  if (!env.ParseFromString(body)) {
    error = {wire::ERROR_MALFORMED, fmt::format("undecodable message ({} bytes)", body.size())};
    return false;
  }
  if (env.body_case() == wire::Envelope::BODY_NOT_SET) {
    error = {wire::ERROR_MALFORMED, "empty or unknown message"};
    return false;
  }
  return true;
}

std::string EncodeRawPayload(const double* values, int dim) {
  std::string out(sizeof(double) * static_cast<size_t>(dim), '\0');
  std::memcpy(out.data(), values, out.size());  // little-endian hosts (x86, aarch64, armhf)
  return out;
}

bool DecodeRawPayload(const std::string& payload, int dim, std::vector<double>& out, WireError& error) {
  if (payload.size() != sizeof(double) * static_cast<size_t>(dim)) {
    error = {wire::ERROR_DIMENSION, fmt::format("payload has {} bytes, expected {} (d={} float64 values)",
                                                payload.size(), sizeof(double) * dim, dim)};
    return false;
  }
  out.resize(static_cast<size_t>(dim));
  std::memcpy(out.data(), payload.data(), payload.size());
  for (int i = 0; i < dim; ++i) {
    if (!std::isfinite(out[i])) {
      error = {wire::ERROR_NON_FINITE, fmt::format("payload value {} is {}", i, out[i])};
      return false;
    }
  }
  return true;
}

bool ValidateModel(const google::protobuf::RepeatedField<double>& model, int dim, std::vector<double>& out,
                   WireError& error) {
  if (model.size() != dim) {
    error = {wire::ERROR_DIMENSION, fmt::format("model has {} values, expected d={}", model.size(), dim)};
    return false;
  }
  out.assign(model.begin(), model.end());
  for (int i = 0; i < dim; ++i) {
    if (!std::isfinite(out[i])) {
      error = {wire::ERROR_NON_FINITE, fmt::format("model value {} is {}", i, out[i])};
      return false;
    }
  }
  return true;
}

bool ValidateHello(const wire::Hello& hello, WireError& error) {
  if (hello.protocol_version() != kProtocolVersion) {
    error = {wire::ERROR_PROTOCOL_VERSION,
             fmt::format("protocol version {} (this coordinator speaks {})", hello.protocol_version(),
                         kProtocolVersion)};
    return false;
  }
  const std::string& id = hello.device_id();
  if (id.empty() || id.size() > kMaxIdChars) {
    error = {wire::ERROR_IDENTITY, fmt::format("device id of {} characters (1..{} allowed)", id.size(), kMaxIdChars)};
    return false;
  }
  for (char ch : id) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')) {
      error = {wire::ERROR_IDENTITY, "device id has characters outside [A-Za-z0-9._-]"};
      return false;
    }
  }
  return true;
}

const char* ErrorReasonName(wire::ErrorReason reason) {
  switch (reason) {
    case wire::ERROR_UNSPECIFIED: return "unspecified";
    case wire::ERROR_PROTOCOL_VERSION: return "protocol_version";
    case wire::ERROR_MALFORMED: return "malformed";
    case wire::ERROR_FRAME_TOO_LARGE: return "frame_too_large";
    case wire::ERROR_IDENTITY: return "identity";
    case wire::ERROR_DIMENSION: return "dimension";
    case wire::ERROR_NON_FINITE: return "non_finite";
    case wire::ERROR_STALE_ROUND: return "stale_round";
    case wire::ERROR_FUTURE_ROUND: return "future_round";
    case wire::ERROR_DUPLICATE: return "duplicate";
    case wire::ERROR_NOT_SAMPLED: return "not_sampled";
    case wire::ERROR_NOT_REGISTERED: return "not_registered";
    case wire::ERROR_CONFIG_MISMATCH: return "config_mismatch";
    case wire::ERROR_ALREADY_CONNECTED: return "already_connected";
    default: return "unknown";
  }
}

}  // namespace fedrt::net
