#include "fedrt/device/connection.h"

#include <sys/stat.h>

#include "fedrt/task/platform.h"

#include <algorithm>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "fedrt/wire/protobuf_codec.h"

namespace fedrt::net {

namespace {
constexpr uint32_t kReadTimeoutMs = 200;  // how often a blocked read looks at the cancel flag
constexpr uint32_t kMinHeartbeatMs = 100;  // a coordinator asking for more gets this
}

DeviceConnection::DeviceConnection(const DeviceOptions& options, const DeviceLog& log, DeviceSession& session)
    : opt_(options), log_(log), session_(session), buf_(16384) {
  sender_ = [this](const wire::Envelope& env) { return send(env); };
}

Status DeviceConnection::init() {
  last_ok_ = std::chrono::steady_clock::now();
  creds_stamp_ = credentials_stamp();
  return tls_->init(opt_.credentials);
}

std::string DeviceConnection::credentials_stamp() const {
  std::string stamp;
  const auto& c = opt_.credentials;
  for (const std::string* f : {&c.psk_file, &c.cert_file, &c.key_file, &c.ca_file}) {
    struct stat st {};
    if (!f->empty() && ::stat(f->c_str(), &st) == 0)
      stamp += fmt::format("{}.{}:{};", st.st_mtim.tv_sec, st.st_mtim.tv_nsec, st.st_size);
    else
      stamp += "-;";
  }
  return stamp;
}

void DeviceConnection::reload_credentials() {
  const std::string now = credentials_stamp();
  if (now == creds_stamp_) return;
  auto fresh = std::make_unique<TlsClient>();
  Status st = fresh->init(opt_.credentials);
  if (!st.ok()) {  // e.g. caught halfway through a copy: the old ones stay, the files are read again next time
    log_("credentials changed but not usable yet: {}", st.message());
    return;
  }
  creds_stamp_ = now;
  tls_ = std::move(fresh);
  log_("credentials reloaded (changed on disk)");
}

Status DeviceConnection::send(const wire::Envelope& env) {
  if (opt_.hooks != nullptr && opt_.hooks->before_send) {
    const bool go = opt_.hooks->before_send(env, [this](const std::string& bytes) { return tls_->write_all(bytes); });
    if (!tls_->connected()) return Status(StatusCode::kUnavailable, std::string("connection lost in a test hook"));
    if (!go) return Status::Ok();
  }
  FEDRT_TRY(tls_->write_all(wire::EncodeFrame(env)));
  last_sent_ = std::chrono::steady_clock::now();
  if (opt_.hooks != nullptr && opt_.hooks->after_send && !opt_.hooks->after_send(env)) {
    tls_->close();
    return Status(StatusCode::kUnavailable, std::string("connection dropped by a test hook"));
  }
  return Status::Ok();
}

void DeviceConnection::wait(long ms, const std::atomic<bool>& cancel) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (!cancel.load() && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::min(std::chrono::milliseconds(20), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                            end - std::chrono::steady_clock::now())));
}

// Connects (with backoff) and sends Hello; Ok with *cancelled when `cancel` was set first.
Status DeviceConnection::connect(const std::atomic<bool>& cancel, bool* cancelled) {
  *cancelled = false;
  for (;;) {
    if (cancel.load()) {
      *cancelled = true;
      return Status::Ok();
    }
    reload_credentials();
    const size_t n = 1 + opt_.fallbacks.size();
    const std::string& host = address_ % n == 0 ? opt_.host : opt_.fallbacks[address_ % n - 1].first;
    const uint16_t port = address_ % n == 0 ? opt_.port : opt_.fallbacks[address_ % n - 1].second;
    Status st = tls_->connect(host, port, kReadTimeoutMs);
    FEDRT_TRY(count_refusal(st));
    if (!st.ok()) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - last_ok_).count();
      if (waited > opt_.give_up_ms)
        return Status(StatusCode::kUnavailable,
                      fmt::format("no connection to {}:{} for {} ms: {}", host, port, waited, st.message()));
      ++address_;  // the next address (a fallback) for the next try
      log_("connect failed: {}; retry in {} ms", st.message(), backoff_);
      wait(backoff_, cancel);
      backoff_ = std::min<long>(backoff_ * 2, 3000);
      continue;
    }
    log_("connected {}:{} tls={} suite={}", host, port, tls_->version(), tls_->suite());
    dec_ = wire::FrameDecoder();
    heartbeat_ms_ = 0;
    wire::Envelope hello;
    wire::Hello* h = hello.mutable_hello();
    h->set_protocol_version(wire::kProtocolVersion);
    h->set_device_id(opt_.id);
    h->set_platform(task::kPlatformName);
    h->set_heartbeats(opt_.heartbeats);
    session_.fill_hello(h);
    st = tls_->write_all(wire::EncodeFrame(hello));
    last_sent_ = std::chrono::steady_clock::now();
    if (st.ok()) return Status::Ok();
    tls_->close();
    log_("disconnected: {}; reconnect in {} ms", st.message(), backoff_);
    wait(backoff_, cancel);
    backoff_ = std::min<long>(backoff_ * 2, 3000);
    last_ok_ = std::chrono::steady_clock::now();
  }
}

Status DeviceConnection::count_refusal(const Status& st) {
  // Refused credentials: a few tries (a key rotated or added a moment ago
  // reaches a running coordinator within a second), then the reason. TLS 1.3
  // refuses a certificate after the client's handshake: at the first read.
  if (st.code() == StatusCode::kPermissionDenied && ++refusals_ >= kMaxCredentialRefusals)
    return Status(StatusCode::kPermissionDenied,
                  fmt::format("{} handshakes in a row refused: {}", refusals_, st.message()));
  return Status::Ok();
}

Status DeviceConnection::drain(bool until_round, DeviceStop& stop, bool* round) {
  std::string body;
  wire::WireError err;
  int k = 0;
  while (!stop.stop && !*round && (k = dec_.next(body, err)) == 1) {
    wire::Envelope env;
    if (!wire::ParseEnvelope(body, env, err)) return Status(StatusCode::kDataLoss, "from coordinator: " + err.message);
    Status hs = session_.handle(env, sender_, stop);
    if (!hs.ok()) {
      log_("error {}", hs.message());
      if (hs.code() == StatusCode::kUnavailable || hs.code() == StatusCode::kDataLoss) return hs;
    }
    if (uint32_t every = 0; session_.take_welcome(&every)) {
      backoff_ = 100;
      heartbeat_ms_ = every == 0 ? 0 : std::max(every, kMinHeartbeatMs);
    }
    *round = until_round && session_.settled();
  }
  if (k < 0) return Status(StatusCode::kDataLoss, "from coordinator: " + err.message);
  return Status::Ok();
}

Status DeviceConnection::heartbeat() {
  if (heartbeat_ms_ == 0 || std::chrono::steady_clock::now() - last_sent_ < std::chrono::milliseconds(heartbeat_ms_))
    return Status::Ok();
  wire::Envelope env;
  env.mutable_heartbeat();
  last_sent_ = std::chrono::steady_clock::now();  // also when a test hook swallows it
  return send(env);
}

Status DeviceConnection::pump(bool until_round, const std::atomic<bool>& cancel, PumpEnd* end) {
  RoundReport stale;
  (void)session_.take_settled(&stale);  // a round settled before this call is not the next one
  if (!tls_->connected()) last_ok_ = std::chrono::steady_clock::now();
  for (;;) {
    if (cancel.load()) {
      tls_->close();
      *end = PumpEnd::kCancelled;
      return Status::Ok();
    }
    if (!tls_->connected()) {
      bool cancelled = false;
      FEDRT_TRY(connect(cancel, &cancelled));
      if (cancelled) continue;
    }
    DeviceStop stop;
    bool round = false;
    Status st = drain(until_round, stop, &round);
    if (st.ok() && !stop.stop && !round) {
      auto n = tls_->read_some(buf_.data(), buf_.size());
      if (!n.ok()) {
        st = n.status();
      } else if (*n > 0) {
        last_ok_ = std::chrono::steady_clock::now();
        refusals_ = 0;  // the coordinator took this session
        dec_.feed(buf_.data(), *n);
        st = drain(until_round, stop, &round);
      }
    }
    if (st.ok() && !stop.stop && !round) st = heartbeat();
    if (stop.stop) {
      tls_->close();
      *end = PumpEnd::kShutdown;
      return stop.status;
    }
    if (round) {
      *end = PumpEnd::kRound;
      return Status::Ok();
    }
    if (!st.ok()) {
      tls_->close();
      FEDRT_TRY(count_refusal(st));
      log_("disconnected: {}; reconnect in {} ms", st.message(), backoff_);
      wait(backoff_, cancel);
      backoff_ = std::min<long>(backoff_ * 2, 3000);
      last_ok_ = std::chrono::steady_clock::now();
    }
  }
}

}  // namespace fedrt::net
