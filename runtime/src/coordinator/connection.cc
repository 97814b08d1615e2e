#include "fedrt/coordinator/connection.h"

#include <chrono>

#include <fmt/format.h>

#include "fedrt/coordinator/log.h"

namespace fedrt::net {

namespace {
// What an emptied output buffer keeps of its capacity: a frame of a few
// records. A chunked broadcast's frame is up to task::kChunkBytes plus
// framing, so a connection that carried one gives the memory back.
constexpr size_t kKeptOutBytes = 4096;
// Frames handled in one turn of a connection before the others get theirs
// (the event loop runs the rest later): a device that floods cannot keep the
// loop to itself.
constexpr int kFramesPerTurn = 64;

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

Connection::Connection(ConnectionOwner* owner, std::unique_ptr<Transport> transport, uint64_t serial)
    : owner_(owner),
      transport_(std::move(transport)),
      hs_timer_(owner->io()),
      pause_timer_(owner->io()),
      serial_(serial),
      peer_(transport_->peer()) {
  mbedtls_ssl_init(&ssl_);
  dec_.set_limit(wire::kMaxHelloFrameBytes);  // until set_registered
}

Status Connection::start(const mbedtls_ssl_config* conf) {
  int rc = mbedtls_ssl_setup(&ssl_, conf);
  if (rc != 0) return Status(StatusCode::kInternal, "ssl setup: " + TlsErrorString(rc));
  mbedtls_ssl_set_bio(&ssl_, this, &Connection::BioSend, &Connection::BioRecv, nullptr);
  auto self = shared_from_this();
  hs_timer_.expires_after(std::chrono::milliseconds(kHandshakeTimeoutMs));
  hs_timer_.async_wait([self](const std::error_code& e) {
    if (!e && self->state_ != State::kRegistered && self->state_ != State::kClosed) {
      const char* stage = self->state_ == State::kHandshake ? "handshake" : "registration";
      if (self->owner_->log_refusal(std::string("timeout/") + stage))
        CoordinatorWarn("refused peer={} stage={} reason=timeout: no completed handshake/registration within {} ms",
                        self->peer_, stage, kHandshakeTimeoutMs);
      self->close("handshake timeout");
    }
  });
  return Status::Ok();
}

void Connection::set_registered(int agent) {
  state_ = State::kRegistered;
  agent_ = agent;
  hs_timer_.cancel();
  dec_.set_limit(task::kMaxLinuxFrameBytes);
}

bool Connection::charge() {
  if (limits_.messages_per_s <= 0) return true;
  const double now = NowSeconds();
  if (budget_.at == 0) budget_ = TokenBucket{limits_.message_burst, now};
  if (budget_.take(limits_.messages_per_s, limits_.message_burst, now)) return true;
  ++flooded_;
  if (!paused_ && state_ != State::kClosed) {
    paused_ = true;
    auto self = shared_from_this();
    pause_timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(1.0 / limits_.messages_per_s)));
    pause_timer_.async_wait([self](const std::error_code& e) {
      if (!e) self->resume();
    });
  }
  return false;
}

void Connection::resume() {
  paused_ = false;
  pump();
}

int Connection::BioSend(void* ctx, const unsigned char* buf, size_t len) {
  auto* c = static_cast<Connection*>(ctx);
  const int n = c->transport_->send(buf, len);
  if (n > 0 && c->state_ == State::kHandshake) c->flight_.observe(buf, static_cast<size_t>(n));
  if (n > 0) c->owner_->traffic(0, static_cast<size_t>(n));
  return n;
}

int Connection::BioRecv(void* ctx, unsigned char* buf, size_t len) {
  auto* c = static_cast<Connection*>(ctx);
  const int n = c->transport_->recv(buf, len);
  if (n > 0) c->owner_->traffic(static_cast<size_t>(n), 0);
  return n;
}

void Connection::wait_read() {
  if (reading_ || state_ == State::kClosed) return;
  reading_ = true;
  auto self = shared_from_this();
  transport_->wait(false, [self](const std::error_code& ec) {
    self->reading_ = false;
    if (!ec) self->pump();
  });
}

void Connection::wait_write() {
  if (writing_ || state_ == State::kClosed) return;
  writing_ = true;
  auto self = shared_from_this();
  transport_->wait(true, [self](const std::error_code& ec) {
    self->writing_ = false;
    if (!ec) self->pump();
  });
}

bool Connection::flush() {
  for (;;) {
    while (out_off_ < out_.size()) {
      const int rc = mbedtls_ssl_write(&ssl_, reinterpret_cast<const unsigned char*>(out_.data()) + out_off_,
                                       out_.size() - out_off_);
      if (rc == MBEDTLS_ERR_SSL_WANT_WRITE || rc == MBEDTLS_ERR_SSL_WANT_READ) {
        wait_write();
        return true;
      }
      if (rc < 0) {
        close("write failed: " + TlsErrorString(rc));
        return false;
      }
      out_off_ += static_cast<size_t>(rc);
    }
    // A broadcast's frames grew out_; ten thousand idle connections should not each keep that.
    if (out_.capacity() > kKeptOutBytes)
      std::string().swap(out_);
    else
      out_.clear();
    out_off_ = 0;
    if (close_after_flush_) {
      close(close_reason_);
      return false;
    }
    if (!source_) return true;
    wire::Envelope next;
    if (!source_(next)) {
      source_ = nullptr;
      return true;
    }
    out_ = wire::EncodeFrame(next);
  }
}

void Connection::stream(Source source) {
  if (state_ == State::kClosed || state_ == State::kHandshake || close_after_flush_) return;
  source_ = std::move(source);
  flush();
}

void Connection::send(const wire::Envelope& env) {
  if (state_ == State::kClosed || state_ == State::kHandshake || close_after_flush_) return;
  const size_t unsent = out_.size() - out_off_;
  if (limits_.max_output_bytes > 0 && unsent > limits_.max_output_bytes) {
    // on_closed writes the one line ("disconnected device=... reason=output: ...").
    close(fmt::format("output: {} bytes queued unsent, above network.max_output_bytes = {} (the device does not read)",
                      unsent, limits_.max_output_bytes));
    return;
  }
  out_ += wire::EncodeFrame(env);
  flush();
}

void Connection::send_error(wire::ErrorReason reason, const std::string& message, bool then_close) {
  wire::Envelope env;
  env.mutable_error()->set_reason(reason);
  env.mutable_error()->set_message(message.substr(0, task::kMaxReasonChars));
  send(env);
  if (then_close && state_ != State::kClosed) {
    close_after_flush_ = true;
    close_reason_ = std::string(wire::ErrorReasonName(reason)) + ": " + message;
    flush();
  }
}

void Connection::pump() {
  if (state_ == State::kClosed) return;
  auto self = shared_from_this();  // callbacks may drop the owner's reference
  if (state_ == State::kHandshake) {
    const int rc = mbedtls_ssl_handshake(&ssl_);
    if (rc == MBEDTLS_ERR_SSL_WANT_READ) return wait_read();
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) return wait_write();
    if (rc != 0) {
      owner_->on_handshake_failed(*this, rc);
      close("handshake failed");
      return;
    }
    bool used_psk = false;
    identity_ = PeerIdentity(owner_->tls(), &ssl_, &used_psk);
    tls_session_ = TlsSessionName(&ssl_, flight_);
    state_ = State::kAwaitHello;
    owner_->on_handshake_done(*this);
    if (state_ == State::kClosed) return;
  }
  if (!flush()) return;
  if (close_after_flush_ || paused_) return;  // draining an error, or over the message budget
  unsigned char buf[16384];
  int frames = 0;
  for (;;) {
    std::string body;
    wire::WireError err;
    int k;
    while ((k = dec_.next(body, err)) == 1) {
      owner_->on_frame(*this, body);
      if (state_ == State::kClosed || close_after_flush_ || paused_) return;
      if (++frames == kFramesPerTurn) {  // the others' turn; this one goes on after them
        asio::post(owner_->io(), [self] { self->pump(); });
        return;
      }
    }
    if (k < 0) {
      if (owner_->log_refusal(std::string("rejected/") + wire::ErrorReasonName(err.reason)))
        CoordinatorWarn("rejected device={} peer={} reason={}: {} (connection closed)", identity_, peer_,
                        wire::ErrorReasonName(err.reason), err.message);
      send_error(err.reason, err.message, true);
      return;
    }
    const int rc = mbedtls_ssl_read(&ssl_, buf, sizeof buf);
    if (rc > 0) {
      dec_.feed(buf, static_cast<size_t>(rc));
      continue;
    }
    if (rc == MBEDTLS_ERR_SSL_WANT_READ) return wait_read();
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) return wait_write();
    if (rc == MBEDTLS_ERR_NET_CONN_RESET)
      close(transport_->end_reason());
    else if (rc == 0 || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY)
      close("closed by peer");
    else
      close("read failed: " + TlsErrorString(rc));
    return;
  }
}

void Connection::close(const std::string& why) {
  if (state_ == State::kClosed) return;
  const bool was_open = state_ != State::kHandshake;
  state_ = State::kClosed;
  hs_timer_.cancel();
  pause_timer_.cancel();
  if (was_open) mbedtls_ssl_close_notify(&ssl_);
  transport_->close();
  owner_->on_closed(*this, why);
}

}  // namespace fedrt::net
