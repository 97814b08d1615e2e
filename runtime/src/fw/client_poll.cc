// The firmware client's poll() state machine (fedrt/fw/client.h): TLS
// handshake, Hello, frames in and out (a chunked update's chunks one frame
// after the other), retry by reconnecting or draining,
// timeouts from the link's clock; run() loops over it.
#include "client_impl.h"

namespace fedrt::fw {

// A decoded-or-not frame of `len` bytes in the buffer: handled, or rejected and logged.
void FwClient::Impl::on_frame(size_t len) {
  pb_istream_t is = pb_istream_from_buffer(frame + kBodyOffset, len);
  if (!pb_decode(&is, fedrt_wire_Envelope_fields, &env) || env.which_body == 0) {
    ++stats.rejected_frames;
    log(LogLine().add("rejected frame: DATA_LOSS: undecodable message (").add(PB_GET_ERROR(&is)).add("); skipped"));
    return;
  }
  const Status st = handle();
  if (shutdown || refused || need_samples || st.ok()) return;
  if (st.code() == StatusCode::kPermissionDenied) {
    fatal = st;
    log(LogLine().add("fatal: ").add(StatusCodeName(st.code())).add(": ").add(st.message()));
    refused = true;
    return;
  }
  if (st.code() == StatusCode::kUnavailable) {
    state = State::kRetry;
    return;
  }
  ++stats.rejected_frames;
  log(LogLine().add("rejected message: ").add(StatusCodeName(st.code())).add(": ").add(st.message()));
}

// One transition of the state machine; again = false when it returns what it needs.
FwClient::Poll FwClient::Impl::step(bool& again) {
  constexpr uint32_t kDrainQuietMs = 500;    // a UART silent this long after a failed session is drained
  constexpr uint32_t kDrainMaxMs = 10000;    // ... or draining stops anyway
  constexpr uint32_t kBackoffMaxMs = 2000;   // reconnect backoff: 100 ms doubling up to this
  Poll p;
  again = true;
  const auto need_link = [&](uint32_t timeout_ms) {
    const uint32_t idle = tls.now() - tls.last_rx_ms();
    p.need = tls.wants_write() ? Need::kWrite : Need::kRead;
    p.wait_ms = idle >= timeout_ms ? 0 : timeout_ms - idle;
    again = false;
    return p;
  };
  switch (state) {
    case State::kStart:
      sessions_before = stats.sessions;
      welcomed = false;
      agent.cut_transfers();  // a transfer cut off with the last session is announced again
      if (!tls.reset().ok()) {
        state = State::kRetry;
        return p;
      }
      state = State::kHandshake;
      return p;
    case State::kHandshake: {
      const TlsLink::Io io = tls.handshake_step();
      if (io == TlsLink::Io::kEnd) {
        state = State::kRetry;
      } else if (io == TlsLink::Io::kDone) {
        if (!send_hello().ok()) state = State::kRetry;
        else state = State::kWrite;
      } else if (tls.now() - tls.last_rx_ms() >= opt.handshake_timeout_ms) {
        log(LogLine().add("handshake timed out"));
        state = State::kRetry;
      } else {
        return need_link(opt.handshake_timeout_ms);
      }
      return p;
    }
    case State::kWrite: {
      const TlsLink::Io io = tls.flush();
      if (io == TlsLink::Io::kPending) return need_link(opt.idle_timeout_ms);
      out_pending = false;
      if (io == TlsLink::Io::kEnd) state = State::kRetry;
      else if (refused) state = State::kError;
      else if (next_chunk()) state = State::kWrite;  // a chunked update: its next chunk
      else state = State::kRead;
      return p;
    }
    case State::kRead: {
      size_t len = 0;
      const TlsLink::Frame f = tls.read_frame(frame + kBodyOffset, kMaxFrame, len);
      if (f == TlsLink::Frame::kEnd) {
        state = State::kRetry;
      } else if (f == TlsLink::Frame::kPending) {
        if (tls.now() - tls.last_rx_ms() < opt.idle_timeout_ms) return need_link(opt.idle_timeout_ms);
        log(LogLine().add("coordinator silent for too long: new session"));
        state = State::kRetry;
      } else if (f == TlsLink::Frame::kOk) {
        on_frame(len);
        if (shutdown) state = State::kDone;
        else if (need_samples) state = State::kSamples;
        else if (out_pending) state = State::kWrite;
        else if (refused) state = State::kError;
      }
      return p;
    }
    case State::kSamples:
      if (!store_sealed) {
        p.need = Need::kSample;
        again = false;
        return p;
      }
      tls.touch();  // the coordinator waited for us, not we for it
      need_samples = false;
      {
        const Status st = on_welcome(env.body.welcome);
        if (!st.ok()) log(LogLine().add("rejected message: ").add(StatusCodeName(st.code())).add(": ").add(st.message()));
      }
      state = out_pending ? State::kWrite : (refused ? State::kError : State::kRead);
      return p;
    case State::kRetry:
      if (wait_from == 0 && backoff_ms == 0) {  // the session just ended
        failed = (stats.sessions > sessions_before && welcomed) ? 0 : failed + 1;
        if (failed >= opt.max_failed_sessions) {
          fatal = Status(StatusCode::kUnavailable, "no working session with the coordinator");
          state = State::kError;
          return p;
        }
        tls.close_notify();  // best effort
        out_pending = false;
        log(LogLine().add("new session"));
        if (opt.link.reconnect == nullptr) {
          state = State::kDrain;
          wait_from = tls.now();
          tls.touch();
          return p;
        }
      } else if (tls.now() - wait_from < backoff_ms) {
        p.need = Need::kWait;
        p.wait_ms = backoff_ms - (tls.now() - wait_from);
        again = false;
        return p;
      }
      if (opt.link.reconnect(opt.link.ctx) == 0) {
        backoff_ms = 0;
        wait_from = 0;
        state = State::kStart;
        return p;
      }
      log(LogLine().add("reconnect failed; retrying"));
      backoff_ms = backoff_ms == 0 ? 100 : (2 * backoff_ms < kBackoffMaxMs ? 2 * backoff_ms : kBackoffMaxMs);
      wait_from = tls.now() | 1u;  // nonzero: a backoff is running
      return p;
    case State::kDrain: {
      const int r = tls.drain(64);
      if (r > 0) return p;
      const uint32_t now = tls.now();
      if (r < 0 || now - tls.last_rx_ms() >= kDrainQuietMs || now - wait_from >= kDrainMaxMs) {
        wait_from = 0;
        state = State::kStart;
        return p;
      }
      p.need = Need::kRead;
      p.wait_ms = kDrainQuietMs - (now - tls.last_rx_ms());
      again = false;
      return p;
    }
    case State::kDone:
      p.need = Need::kDone;
      again = false;
      return p;
    case State::kError:
      p.need = Need::kError;
      p.status = fatal.ok() ? Status::Internal("fw client: failed") : fatal;
      again = false;
      return p;
  }
  again = false;
  p.need = Need::kError;
  p.status = Status::Internal("fw client: bad state");
  return p;
}

FwClient::Poll FwClient::poll() {
  if (impl_ == nullptr) {
    Poll p;
    p.need = Need::kError;
    p.status = Status::FailedPrecondition("fw client: not initialised");
    return p;
  }
  bool again = true;
  Poll p;
  while (again) p = impl_->step(again);
  return p;
}

Status FwClient::run() {
  if (impl_ == nullptr) return Status::FailedPrecondition("fw client: not initialised");
  const ByteLink& l = impl_->opt.link;
  for (;;) {
    const Poll p = poll();
    switch (p.need) {
      case Need::kDone: return Status::Ok();
      case Need::kError: return p.status;
      case Need::kSample: return Status::FailedPrecondition("fw client: an own-data task and no samples (feed them)");
      case Need::kRead:
      case Need::kWait:
        if (l.wait != nullptr) l.wait(l.ctx, p.wait_ms, false);
        break;
      case Need::kWrite:
        if (l.wait != nullptr) l.wait(l.ctx, 10, true);
        break;
    }
  }
}

}  // namespace fedrt::fw
