#pragma once
// The HTTP endpoint's front door (docs/dashboard.md, "Security"): a
// cpp-httplib server whose connections are read by one event loop of its own
// until their request head is complete, before any thread or handler sees
// them. A head above kMaxHeadBytes is answered 431 and closed, one not
// complete within kHeadTimeoutMs is closed, and at most kMaxWaiting
// connections wait (the oldest is closed to make room), so slow or endless
// clients hold a few KiB each and no thread: a complete request goes to the
// worker threads at once. Each answer must be written within kAnswerTimeoutMs.
// One request per connection. Private to the ops module. Host code.

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <httplib.h>

namespace fedrt::net {

class GatedHttpServer : public httplib::Server {
 public:
  static constexpr size_t kMaxHeadBytes = 16384;  // request line and header fields together
  static constexpr int kHeadTimeoutMs = 5000;     // from accept to the head's last byte
  static constexpr int kAnswerTimeoutMs = 10000;  // from the complete head to the answer's last byte
  static constexpr size_t kMaxWaiting = 1024;     // connections whose head is not complete yet

  explicit GatedHttpServer(size_t threads);  // threads: the workers that answer complete requests
  ~GatedHttpServer() override;                // closes what waits, joins the loop and the workers
  // After bind: room for kMaxWaiting connections in the kernel's accept queue (cpp-httplib
  // listens with 5, so a burst of clients would wait out SYN retransmissions).
  void widen_backlog();

 private:
  struct Waiting {
    int fd = -1;
    std::string head;
    long long deadline_ms = 0;
    size_t draining = 0;  // > 0: answered and half-closed; input read and dropped up to this many bytes more
  };
  bool process_and_close_socket(socket_t sock) override;  // on the listening thread: hand over, return
  void loop();
  bool read_some(Waiting& w);  // false: done with it (handed over or closed)
  // Answers `status` and half-closes; reading on until the client closes lets the answer arrive
  // (a close with unread input would reset the connection and lose it).
  static void refuse(Waiting& w, const std::string& status, const std::string& text);
  void answer(int fd, std::string head);

  int wake_[2] = {-1, -1};  // a pipe: new connections and stop
  std::mutex mu_;
  std::deque<int> incoming_;
  std::atomic<bool> stop_{false};
  std::atomic<int> answering_{0};  // answers queued or being written
  std::deque<Waiting> waiting_;  // the loop's own, oldest first
  std::unique_ptr<httplib::ThreadPool> workers_;
  std::thread thread_;
};

}  // namespace fedrt::net
