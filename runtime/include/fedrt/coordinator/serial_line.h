#pragma once
// SerialLine: a microcontroller on a serial line (a board's UART as
// /dev/ttyACM0, or a pseudo-terminal), served by the coordinator with the
// same Connection, TLS session, admission and limits as a TCP device
// (`--serial PATH[,BAUD]`; docs/microcontrollers.md, "A board on a serial
// line"). A line has no connection boundaries, so the line cuts its bytes
// into sessions itself:
//   - between sessions it discards bytes until a TLS ClientHello record
//     starts (StartsClientHello), and hands a Transport that begins there to
//     the coordinator, which admits it like an accepted socket;
//   - in a session it follows the TLS record boundaries; a record that
//     starts a ClientHello after the session's first record (but the one a
//     HelloRetryRequest asks for) means the device began a new session (it
//     restarted, or its link timed out): the old session ends without another
//     byte written, and the new one starts on that record;
//   - a record that stops mid-way for kRecordStallMs (bytes lost: a wrong
//     length would otherwise swallow what follows) ends the session;
//   - when a session fails (a bad record, a timeout, limits), the record it
//     failed on is scanned again, so a ClientHello inside it is not lost;
//   - bytes discarded between sessions and then kResetQuietMs without a
//     ClientHello, and the opening of the line, are answered with a TLS
//     fatal alert record (kResetRecord; at most one per kResetIntervalMs):
//     a device still in an old session fails it at once and starts a new
//     one, as a closed TCP connection would tell it;
//   - a flood of garbage costs no memory (discarded as read), is logged
//     once per gap between sessions, and is read at a bounded rate;
//   - a line that is lost (a board unplugged) is reopened every second.
// Host code.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <asio.hpp>

#include "fedrt/core/status.h"
#include "fedrt/coordinator/connection.h"
#include "fedrt/coordinator/transport.h"

namespace fedrt::net {

// One --serial value, "PATH[,BAUD]".
struct SerialLineSpec {
  std::string path;
  uint32_t baud = 115200;  // ignored by a pseudo-terminal
};
// Parses "PATH[,BAUD]"; the error names the value and the rates a tty takes.
Result<SerialLineSpec> ParseSerialLine(const std::string& value);

namespace serial {
// Bytes StartsClientHello reads to decide.
constexpr size_t kHelloPrefix = 11;
// Whether data[0, n) starts a TLS ClientHello record (content type 22,
// record version 3.1-3.3, a length a ClientHello can have, handshake type 1,
// a handshake length that fills the record, client version 3.1-3.3): 1 yes,
// 0 no, -1 the bytes so far could start one (n < kHelloPrefix).
int StartsClientHello(const uint8_t* data, size_t n);
// Whether data[0, n) starts a HelloRetryRequest (a ServerHello whose random is
// RFC 8446's fixed value): the client answers it with a second ClientHello.
bool IsHelloRetryRequest(const uint8_t* data, size_t n);
// The first offset in data[0, n) where StartsClientHello is not 0 (n if none).
size_t FindClientHello(const uint8_t* data, size_t n);
// Sent to the device to end a session it may still hold: a TLS fatal alert
// (unexpected_message) in a plaintext record, which a TLS 1.3 session
// rejects and a handshake fails on.
constexpr uint8_t kResetRecord[7] = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x0a};
}  // namespace serial

class SerialLine : public std::enable_shared_from_this<SerialLine> {
 public:
  // A session that begins on the line: the coordinator admits it like an accepted socket.
  using OnSession = std::function<void(std::unique_ptr<Transport>)>;
  static constexpr uint32_t kResetQuietMs = 200;
  static constexpr uint32_t kResetIntervalMs = 2000;
  static constexpr uint32_t kReopenMs = 1000;
  static constexpr uint32_t kRecordStallMs = 2000;
  static constexpr size_t kFloodBytes = 64 * 1024;  // discarded in one gap: warned once, then read slowly
  static constexpr uint32_t kFloodPauseMs = 10;     // ... 4 KB per pause at most

  SerialLine(ConnectionOwner* owner, SerialLineSpec spec, OnSession on_session);
  ~SerialLine();
  SerialLine(const SerialLine&) = delete;
  SerialLine& operator=(const SerialLine&) = delete;

  // Opens the tty (raw, 8N1, no flow control, BAUD; exclusive). The error names the path.
  Status open();
  // Ends any session the device still holds and waits for its ClientHello.
  void start();
  // No new sessions (the run is over); a session in progress goes on.
  void stop();
  const std::string& name() const { return name_; }

  // What discarding saw since the start (tests, logs).
  uint64_t discarded_bytes() const { return discarded_total_; }
  uint64_t sessions() const { return sessions_; }

 private:
  friend class SerialTransport;
  enum class Mode { kClosed, kHunting, kSession, kLost, kStopped };

  // Reads what the tty holds (up to 4 KB): false when the line is lost.
  bool fill();
  void hunt();
  void wait_hunt();
  void begin_session();
  void lost(const std::string& why);
  void reopen_later();
  void schedule_reset();
  void write_reset();
  size_t buffered() const { return in_.size() - in_pos_; }
  const uint8_t* data() const { return in_.data() + in_pos_; }
  void consume(size_t n);

  // The session's transport calls these (session: its number; a stale one is ignored).
  int session_recv(uint64_t session, unsigned char* buf, size_t len);
  int session_send(uint64_t session, const unsigned char* buf, size_t len);
  void session_wait(uint64_t session, bool write, Transport::WaitHandler done);
  void session_end(uint64_t session);

  ConnectionOwner* owner_;
  SerialLineSpec spec_;
  OnSession on_session_;
  std::string name_;  // "serial:PATH"
  asio::posix::stream_descriptor desc_;
  asio::steady_timer timer_;        // reopening, the flood's pace
  asio::steady_timer reset_timer_;  // kResetQuietMs after discarding
  asio::steady_timer stall_timer_;  // kRecordStallMs in the middle of a record
  Transport::WaitHandler pending_read_;  // the session's read wait, while it waits
  Mode mode_ = Mode::kClosed;
  bool stopped_ = false;
  bool waiting_ = false;            // a hunting wait is pending
  std::vector<uint8_t> in_;         // bytes read and not yet used: [in_pos_, size)
  size_t in_pos_ = 0;
  size_t rescan_left_ = 0;          // the first bytes of in_ are a failed record scanned again
  // The session: its number, whether it sent anything yet and was that a
  // HelloRetryRequest (answered yet), its records so far, the bytes left of
  // the current record, and that record's bytes.
  uint64_t session_ = 0;
  bool sent_ = false, hrr_ = false, hrr_answered_ = false;
  bool superseded_ = false;  // a new ClientHello ended it: nothing more is written
  bool stalled_ = false;     // a record stopped mid-way
  uint64_t delivered_ = 0;   // bytes handed to the session (whether a stalled record moved)
  uint64_t records_ = 0;
  size_t record_left_ = 0;
  std::vector<uint8_t> record_;
  std::string end_reason_;
  // Between sessions: bytes discarded in this gap, and whether the flood was logged.
  uint64_t discarded_ = 0;
  bool flood_logged_ = false;
  std::chrono::steady_clock::time_point last_reset_{};
  uint64_t discarded_total_ = 0;
  uint64_t sessions_ = 0;
};

}  // namespace fedrt::net
