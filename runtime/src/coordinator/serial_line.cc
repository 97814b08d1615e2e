// A microcontroller on a serial line (coordinator/serial_line.h): the tty,
// where sessions start in its bytes, and the Transport of one session.
#include "fedrt/coordinator/serial_line.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>

#include "fedrt/coordinator/log.h"

namespace fedrt::net {

namespace {

constexpr size_t kReadBytes = 4096;
// A ClientHello's body is at least 45 bytes (handshake header, version,
// random, session id length, one suite, one compression method).
constexpr uint32_t kMinHelloRecord = 45;
constexpr uint32_t kMaxPlainRecord = 16384;

struct Rate {
  uint32_t baud;
  speed_t speed;
};
constexpr Rate kRates[] = {{1200, B1200},       {2400, B2400},       {4800, B4800},       {9600, B9600},
                           {19200, B19200},     {38400, B38400},     {57600, B57600},     {115200, B115200},
                           {230400, B230400},   {460800, B460800},   {500000, B500000},   {576000, B576000},
                           {921600, B921600},   {1000000, B1000000}, {1500000, B1500000}, {2000000, B2000000},
                           {3000000, B3000000}, {4000000, B4000000}};

std::string RateList() {
  std::string s;
  for (const Rate& r : kRates) s += (s.empty() ? "" : ", ") + std::to_string(r.baud);
  return s;
}

}  // namespace

Result<SerialLineSpec> ParseSerialLine(const std::string& value) {
  SerialLineSpec spec;
  const auto comma = value.rfind(',');
  spec.path = value.substr(0, comma);
  if (comma != std::string::npos) {
    const std::string baud = value.substr(comma + 1);
    const bool digits = !baud.empty() && baud.size() <= 8 && baud.find_first_not_of("0123456789") == std::string::npos;
    const uint32_t b = digits ? static_cast<uint32_t>(std::stoul(baud)) : 0;
    if (std::none_of(std::begin(kRates), std::end(kRates), [&](const Rate& r) { return r.baud == b; }))
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("'{}': the baud rate '{}' is not one a tty takes ({})", value, baud, RateList()));
    spec.baud = b;
  }
  if (spec.path.empty())
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("'{}': expected PATH[,BAUD], e.g. /dev/ttyACM0,115200", value));
  return spec;
}

namespace serial {

int StartsClientHello(const uint8_t* p, size_t n) {
  if (n > 0 && p[0] != 0x16) return 0;  // handshake record
  if (n > 1 && p[1] != 0x03) return 0;
  if (n > 2 && (p[2] < 0x01 || p[2] > 0x03)) return 0;
  if (n > 4) {
    const uint32_t len = (uint32_t(p[3]) << 8) | p[4];
    if (len < kMinHelloRecord || len > kMaxPlainRecord) return 0;
    if (n > 8) {  // the ClientHello fills the record (or goes on in the next one)
      const uint32_t hs = (uint32_t(p[6]) << 16) | (uint32_t(p[7]) << 8) | p[8];
      if (hs + 4 < len) return 0;
    }
  }
  if (n > 5 && p[5] != 0x01) return 0;  // client_hello
  if (n > 9 && p[9] != 0x03) return 0;  // legacy_version 3.1-3.3
  if (n > 10 && (p[10] < 0x01 || p[10] > 0x03)) return 0;
  return n >= kHelloPrefix ? 1 : -1;
}

bool IsHelloRetryRequest(const uint8_t* p, size_t n) {
  // SHA-256("HelloRetryRequest"), the random of a ServerHello that is one (RFC 8446, 4.1.3).
  static constexpr uint8_t kHrrRandom[32] = {0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c,
                                             0x02, 0x1e, 0x65, 0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb,
                                             0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c};
  return n >= 11 + sizeof kHrrRandom && p[0] == 0x16 && p[5] == 0x02 &&
         std::memcmp(p + 11, kHrrRandom, sizeof kHrrRandom) == 0;
}

size_t FindClientHello(const uint8_t* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const void* hit = std::memchr(data + i, 0x16, n - i);
    if (hit == nullptr) return n;
    i = static_cast<size_t>(static_cast<const uint8_t*>(hit) - data);
    if (StartsClientHello(data + i, n - i) != 0) return i;
  }
  return n;
}

}  // namespace serial

// One session on the line: forwards to the line, which ignores it once the session is over.
class SerialTransport final : public Transport {
 public:
  SerialTransport(std::shared_ptr<SerialLine> line, uint64_t session) : line_(std::move(line)), session_(session) {
    peer_ = line_->name();
  }
  ~SerialTransport() override { close(); }
  int send(const unsigned char* buf, size_t len) override { return line_->session_send(session_, buf, len); }
  int recv(unsigned char* buf, size_t len) override { return line_->session_recv(session_, buf, len); }
  void wait(bool write, WaitHandler done) override { line_->session_wait(session_, write, std::move(done)); }
  void close() override {
    if (closed_) return;
    closed_ = true;
    line_->session_end(session_);
  }
  std::string end_reason() const override { return line_->end_reason_; }

 private:
  std::shared_ptr<SerialLine> line_;
  uint64_t session_;
  bool closed_ = false;
};

SerialLine::SerialLine(ConnectionOwner* owner, SerialLineSpec spec, OnSession on_session)
    : owner_(owner),
      spec_(std::move(spec)),
      on_session_(std::move(on_session)),
      name_("serial:" + spec_.path),
      desc_(owner->io()),
      timer_(owner->io()),
      reset_timer_(owner->io()),
      stall_timer_(owner->io()) {}

SerialLine::~SerialLine() {
  std::error_code ec;
  desc_.close(ec);
}

Status SerialLine::open() {
  const int fd = ::open(spec_.path.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return Status(StatusCode::kUnavailable,
                  fmt::format("--serial {}: cannot open: {}{}", spec_.path, std::strerror(e),
                              e == EACCES ? " (is this user in the tty's group, e.g. dialout?)" : ""));
  }
  auto fail = [&](const std::string& what) {
    ::close(fd);
    return Status(StatusCode::kUnavailable, fmt::format("--serial {}: {}", spec_.path, what));
  };
  if (!::isatty(fd)) return fail("not a terminal (a serial device such as /dev/ttyACM0, or a pseudo-terminal)");
  termios t{};
  if (::tcgetattr(fd, &t) != 0) return fail(std::string("tcgetattr: ") + std::strerror(errno));
  // Raw bytes, 8N1, no flow control, no modem lines: TLS records, not text.
  ::cfmakeraw(&t);
  t.c_cflag |= CLOCAL | CREAD;
  t.c_cflag &= ~(CSTOPB | PARENB | CRTSCTS);
  t.c_cc[VMIN] = 1;
  t.c_cc[VTIME] = 0;
  const speed_t speed =
      std::find_if(std::begin(kRates), std::end(kRates), [&](const Rate& r) { return r.baud == spec_.baud; })->speed;
  if (::cfsetispeed(&t, speed) != 0 || ::cfsetospeed(&t, speed) != 0 || ::tcsetattr(fd, TCSANOW, &t) != 0)
    return fail(fmt::format("cannot set raw mode at {} baud: {}", spec_.baud, std::strerror(errno)));
  (void)::ioctl(fd, TIOCEXCL);       // one program on the line
  std::error_code ec;
  desc_.assign(fd, ec);
  if (ec) return fail("cannot watch it: " + ec.message());
  return Status::Ok();
}

void SerialLine::start() {
  if (!desc_.is_open()) return;
  mode_ = Mode::kHunting;
  discarded_ = 0;
  flood_logged_ = false;
  CoordinatorLog("serial line={} baud={} waiting for a TLS ClientHello", name_, spec_.baud);
  const uint64_t before = sessions_;
  hunt();
  // Unless a ClientHello was waiting, a session the device holds from before is over.
  if (sessions_ == before && mode_ == Mode::kHunting) write_reset();
}

void SerialLine::stop() {
  if (mode_ == Mode::kHunting || mode_ == Mode::kLost || mode_ == Mode::kClosed) {
    std::error_code ec;
    desc_.cancel(ec);
  }
  if (mode_ != Mode::kSession) mode_ = Mode::kStopped;
  stopped_ = true;
  timer_.cancel();
  reset_timer_.cancel();
  stall_timer_.cancel();
}

void SerialLine::consume(size_t n) {
  in_pos_ += n;
  rescan_left_ -= std::min(rescan_left_, n);
}

bool SerialLine::fill() {
  if (in_pos_ == in_.size()) {
    in_.clear();
    in_pos_ = 0;
  } else if (in_pos_ >= kReadBytes) {
    in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(in_pos_));
    in_pos_ = 0;
  }
  const size_t old = in_.size();
  in_.resize(old + kReadBytes);
  const ssize_t r = ::read(desc_.native_handle(), in_.data() + old, kReadBytes);
  const int e = errno;
  in_.resize(old + static_cast<size_t>(std::max<ssize_t>(r, 0)));
  if (r > 0 || (r < 0 && (e == EAGAIN || e == EWOULDBLOCK || e == EINTR))) return true;
  lost(r == 0 ? std::string("hung up") : std::string(std::strerror(e)));
  return false;
}

// Between sessions: discard up to a ClientHello; begin a session on it, or read on.
void SerialLine::hunt() {
  while (mode_ == Mode::kHunting) {
    const size_t at = serial::FindClientHello(data(), buffered());
    if (at > 0) {
      const size_t fresh = at - std::min(rescan_left_, at);  // the failed record's bytes were counted before
      consume(at);
      if (fresh > 0) {
        discarded_ += fresh;
        discarded_total_ += fresh;
        schedule_reset();
        if (discarded_ >= kFloodBytes && !flood_logged_) {
          flood_logged_ = true;
          if (owner_->log_refusal("serial/garbage"))
            CoordinatorWarn("refused peer={} stage=line reason=garbage: {} bytes that start no TLS ClientHello; "
                            "discarding what follows until one does, read at most {} KB/s (logged once per gap "
                            "between sessions)",
                            name_, discarded_, kReadBytes / kFloodPauseMs);
        }
      }
    }
    if (buffered() >= serial::kHelloPrefix) return begin_session();
    const size_t before = buffered();
    if (!fill()) return;
    if (buffered() == before) return wait_hunt();
    if (discarded_ >= kFloodBytes) {  // a flood: this read is scanned now, the next one after a pause
      const size_t at2 = serial::FindClientHello(data(), buffered());
      consume(at2);
      discarded_ += at2;
      discarded_total_ += at2;
      if (buffered() >= serial::kHelloPrefix) return begin_session();
      auto self = shared_from_this();
      timer_.expires_after(std::chrono::milliseconds(kFloodPauseMs));
      timer_.async_wait([self](const std::error_code& ec) {
        if (!ec) self->hunt();
      });
      return;
    }
  }
}

void SerialLine::wait_hunt() {
  if (waiting_) return;
  waiting_ = true;
  auto self = shared_from_this();
  desc_.async_wait(asio::posix::stream_descriptor::wait_read, [self](const std::error_code& ec) {
    self->waiting_ = false;
    if (!ec && self->mode_ == Mode::kHunting) self->hunt();
  });
}

void SerialLine::begin_session() {
  reset_timer_.cancel();
  mode_ = Mode::kSession;
  ++session_;
  ++sessions_;
  superseded_ = stalled_ = hrr_ = hrr_answered_ = sent_ = false;
  records_ = 0;
  record_left_ = 0;
  record_.clear();
  rescan_left_ = 0;
  end_reason_ = "closed by peer";
  if (discarded_ > 0)
    CoordinatorLog("serial line={} session={} starts on a ClientHello after {} discarded bytes", name_, session_,
                   discarded_);
  discarded_ = 0;
  flood_logged_ = false;
  on_session_(std::make_unique<SerialTransport>(shared_from_this(), session_));
}

int SerialLine::session_recv(uint64_t s, unsigned char* buf, size_t len) {
  if (s != session_ || mode_ != Mode::kSession || superseded_ || stalled_) return MBEDTLS_ERR_NET_CONN_RESET;
  if (record_left_ == 0) {  // a record starts: its header, and whether it is a new ClientHello
    while (buffered() < serial::kHelloPrefix) {
      const size_t before = buffered();
      if (!fill()) return MBEDTLS_ERR_NET_CONN_RESET;
      if (buffered() == before) break;
    }
    if (buffered() < 5) return MBEDTLS_ERR_SSL_WANT_READ;
    if (records_ > 0) {  // a ClientHello after the session's first record: the device started over
      const int hello = serial::StartsClientHello(data(), buffered());
      if (hello < 0) return MBEDTLS_ERR_SSL_WANT_READ;  // every record is longer: the rest comes
      if (hello > 0 && hrr_ && !hrr_answered_) {
        hrr_answered_ = true;  // the one ClientHello the coordinator's HelloRetryRequest asked for
      } else if (hello > 0) {
        // The old session ends here, and nothing it still had to send may
        // reach the device's new handshake (not even mbedTLS's alert).
        superseded_ = true;
        end_reason_ = "the device started a new session on the line";
        (void)::tcflush(desc_.native_handle(), TCOFLUSH);
        return MBEDTLS_ERR_NET_CONN_RESET;
      }
    }
    record_left_ = 5 + ((size_t(data()[3]) << 8) | data()[4]);
    record_.clear();
    ++records_;
  }
  if (buffered() == 0) {
    if (!fill()) return MBEDTLS_ERR_NET_CONN_RESET;
    if (buffered() == 0) return MBEDTLS_ERR_SSL_WANT_READ;
  }
  const size_t n = std::min({len, buffered(), record_left_});
  std::memcpy(buf, data(), n);
  record_.insert(record_.end(), data(), data() + n);
  consume(n);
  record_left_ -= n;
  delivered_ += n;
  return static_cast<int>(n);
}

int SerialLine::session_send(uint64_t s, const unsigned char* buf, size_t len) {
  if (s != session_ || mode_ != Mode::kSession) return MBEDTLS_ERR_NET_SEND_FAILED;
  if (superseded_) return static_cast<int>(len);  // dropped: the device is in its next handshake
  if (!sent_) {  // the session's first bytes out: a HelloRetryRequest asks for a second ClientHello
    sent_ = true;
    hrr_ = serial::IsHelloRetryRequest(buf, len);
  }
  const ssize_t n = ::write(desc_.native_handle(), buf, len);
  if (n >= 0) return static_cast<int>(n);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_WRITE;
  return MBEDTLS_ERR_NET_SEND_FAILED;
}

void SerialLine::session_wait(uint64_t s, bool write, Transport::WaitHandler done) {
  if (s != session_ || mode_ != Mode::kSession) {
    asio::post(owner_->io(), [done = std::move(done)] { done(asio::error::operation_aborted); });
    return;
  }
  if (write) return desc_.async_wait(asio::posix::stream_descriptor::wait_write, std::move(done));
  // A read: kept here, so that a record that stalls mid-way can wake the session to end it.
  pending_read_ = std::move(done);
  auto self = shared_from_this();
  desc_.async_wait(asio::posix::stream_descriptor::wait_read, [self](const std::error_code& ec) {
    if (auto d = std::move(self->pending_read_)) {
      self->pending_read_ = nullptr;
      d(ec);
    }
  });
  if (record_left_ == 0) {
    stall_timer_.cancel();
    return;
  }
  // In the middle of a record: a device writes a record in one go, so a
  // pause of kRecordStallMs means bytes were lost (its length is wrong, or
  // the device stopped mid-record): the session ends, its record is scanned
  // again, and the reset record tells the device.
  const uint64_t progress = delivered_;
  stall_timer_.expires_after(std::chrono::milliseconds(kRecordStallMs));
  stall_timer_.async_wait([self, s, progress](const std::error_code& ec) {
    if (ec || s != self->session_ || self->mode_ != Mode::kSession || self->delivered_ != progress) return;
    if (self->record_left_ == 0 || !self->pending_read_) return;
    self->stalled_ = true;
    self->end_reason_ = fmt::format("a TLS record stopped {} bytes short for {} ms (bytes lost on the line?)",
                                    self->record_left_, kRecordStallMs);
    auto d = std::move(self->pending_read_);
    self->pending_read_ = nullptr;
    std::error_code cancel_ec;
    self->desc_.cancel(cancel_ec);
    asio::post(self->owner_->io(), [d = std::move(d)] { d(std::error_code()); });  // it reads, and is told
  });
}

void SerialLine::session_end(uint64_t s) {
  if (s != session_ || mode_ != Mode::kSession) return;
  std::error_code ec;
  desc_.cancel(ec);  // the session's waits
  stall_timer_.cancel();
  pending_read_ = nullptr;
  if (!superseded_) {
    if (records_ == 0) {
      consume(std::min<size_t>(1, buffered()));  // refused before it read: not this ClientHello again
    } else {
      // The record the session ended on is scanned again (a ClientHello in a
      // failed record is not lost), but never from the session's own first byte.
      const size_t from = records_ == 1 ? 1 : 0;
      if (record_.size() > from) {
        in_.erase(in_.begin(), in_.begin() + static_cast<std::ptrdiff_t>(in_pos_));
        in_.insert(in_.begin(), record_.begin() + static_cast<std::ptrdiff_t>(from), record_.end());
        in_pos_ = 0;
        rescan_left_ = record_.size() - from;
      }
    }
  }
  record_.clear();
  record_.shrink_to_fit();
  mode_ = stopped_ ? Mode::kStopped : Mode::kHunting;
  if (mode_ != Mode::kHunting) return;
  auto self = shared_from_this();
  asio::post(owner_->io(), [self] { self->hunt(); });
}

void SerialLine::lost(const std::string& why) {
  end_reason_ = "serial line lost: " + why;
  std::error_code ec;
  desc_.close(ec);
  in_.clear();
  in_pos_ = 0;
  rescan_left_ = 0;
  mode_ = Mode::kLost;
  reset_timer_.cancel();
  if (stopped_)  // the run is over: the device went with it
    CoordinatorDebug("serial line={} lost: {}", name_, why);
  else
    CoordinatorWarn("serial line={} lost: {}; reopening it every {} ms", name_, why, kReopenMs);
  reopen_later();
}

void SerialLine::reopen_later() {
  if (stopped_) return;
  auto self = shared_from_this();
  timer_.expires_after(std::chrono::milliseconds(kReopenMs));
  timer_.async_wait([self](const std::error_code& ec) {
    if (ec || self->stopped_ || self->mode_ != Mode::kLost) return;
    if (!self->open().ok()) return self->reopen_later();
    CoordinatorLog("serial line={} reopened", self->name_);
    self->start();
  });
}

// kResetQuietMs after bytes were discarded, unless a session began: the reset record.
void SerialLine::schedule_reset() {
  auto self = shared_from_this();
  reset_timer_.expires_after(std::chrono::milliseconds(kResetQuietMs));
  reset_timer_.async_wait([self](const std::error_code& ec) {
    if (ec || self->mode_ != Mode::kHunting) return;
    const auto since = std::chrono::steady_clock::now() - self->last_reset_;
    if (since < std::chrono::milliseconds(kResetIntervalMs)) {
      self->reset_timer_.expires_after(std::chrono::milliseconds(kResetIntervalMs) - since);
      self->reset_timer_.async_wait([self](const std::error_code& e) {
        if (!e && self->mode_ == Mode::kHunting) self->write_reset();
      });
      return;
    }
    self->write_reset();
  });
}

void SerialLine::write_reset() {
  last_reset_ = std::chrono::steady_clock::now();
  const ssize_t n = ::write(desc_.native_handle(), serial::kResetRecord, sizeof serial::kResetRecord);
  CoordinatorDebug("serial line={} reset record sent ({} bytes)", name_, n);
}

}  // namespace fedrt::net
