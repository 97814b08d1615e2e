#include "http_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace fedrt::net {

namespace {

// Answers queued or being written at most; beyond, a complete request is answered 503 at once.
constexpr int kMaxAnswering = 256;

long long NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The listening thread runs each accepted connection's task at once: it only hands the socket over.
class InlineQueue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

void Close(int fd) {
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

// A short answer written without waiting (what the socket takes).
void Answer(int fd, const std::string& status, const std::string& text) {
  const std::string body = text + "\n";
  const std::string r = "HTTP/1.1 " + status + "\r\nContent-Type: text/plain\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  (void)::send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// What a refused connection's input may still bring (and is dropped) before it is closed.
constexpr size_t kDrainBytes = 4 * GatedHttpServer::kMaxHeadBytes;
constexpr int kDrainMs = 1000;

void NameOf(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                      : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  char text[INET6_ADDRSTRLEN] = "";
  port = 0;
  if (rc == 0 && a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (rc == 0 && a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

// A request whose head is already read: the head from memory, then the socket;
// every wait ends at the answer's deadline.
class GateStream : public httplib::Stream {
 public:
  GateStream(int fd, std::string head, long long deadline_ms)
      : fd_(fd), head_(std::move(head)), deadline_ms_(deadline_ms) {}
  bool is_readable() const override { return off_ < head_.size() || wait(POLLIN); }
  bool is_writable() const override { return wait(POLLOUT); }
  ssize_t read(char* p, size_t n) override {
    if (off_ < head_.size()) {
      const size_t k = std::min(n, head_.size() - off_);
      std::memcpy(p, head_.data() + off_, k);
      off_ += k;
      return static_cast<ssize_t>(k);
    }
    return wait(POLLIN) ? ::recv(fd_, p, n, MSG_DONTWAIT) : -1;
  }
  ssize_t write(const char* p, size_t n) override {
    return wait(POLLOUT) ? ::send(fd_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT) : -1;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { NameOf(fd_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { NameOf(fd_, false, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  bool wait(short events) const {
    const long long left = deadline_ms_ - NowMs();
    if (left <= 0) return false;
    pollfd p{fd_, events, 0};
    return ::poll(&p, 1, static_cast<int>(left)) > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }

  int fd_;
  std::string head_;
  size_t off_ = 0;
  long long deadline_ms_;
};

}  // namespace

GatedHttpServer::GatedHttpServer(size_t threads) : workers_(std::make_unique<httplib::ThreadPool>(threads)) {
  new_task_queue = [] { return new InlineQueue(); };
  if (::pipe2(wake_, O_NONBLOCK | O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
  thread_ = std::thread([this] { loop(); });
}

GatedHttpServer::~GatedHttpServer() {
  stop_ = true;
  if (wake_[1] >= 0) (void)::write(wake_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  workers_->shutdown();
  for (int fd : incoming_) Close(fd);
  for (int fd : wake_)
    if (fd >= 0) ::close(fd);
}

void GatedHttpServer::widen_backlog() { (void)::listen(svr_sock_, static_cast<int>(kMaxWaiting)); }

bool GatedHttpServer::process_and_close_socket(socket_t sock) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    incoming_.push_back(sock);
  }
  if (wake_[1] >= 0) (void)::write(wake_[1], "x", 1);
  return true;
}

void GatedHttpServer::loop() {
  std::vector<pollfd> fds;
  while (!stop_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : incoming_) {
        if (waiting_.size() >= kMaxWaiting) {  // the oldest makes room
          Close(waiting_.front().fd);
          waiting_.pop_front();
        }
        waiting_.push_back(Waiting{fd, std::string(), NowMs() + kHeadTimeoutMs});
      }
      incoming_.clear();
    }
    const long long now = NowMs();
    long long next = now + 1000;
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->deadline_ms <= now) {
        if (it->draining == 0) Answer(it->fd, "408 Request Timeout", "408 the request head did not arrive within 5 s");
        Close(it->fd);
        it = waiting_.erase(it);
      } else {
        next = std::min(next, it->deadline_ms);
        ++it;
      }
    }
    fds.assign(1, pollfd{wake_[0], POLLIN, 0});
    for (const Waiting& w : waiting_) fds.push_back(pollfd{w.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max(1LL, next - now))) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) {
      char drain[256];
      while (::read(wake_[0], drain, sizeof drain) > 0) {
      }
    }
    std::deque<Waiting> still;
    for (size_t i = 0; i < waiting_.size(); ++i)
      if (fds[i + 1].revents == 0 || read_some(waiting_[i])) still.push_back(std::move(waiting_[i]));
    waiting_.swap(still);
  }
  for (const Waiting& w : waiting_) Close(w.fd);
  waiting_.clear();
}

void GatedHttpServer::refuse(Waiting& w, const std::string& status, const std::string& text) {
  Answer(w.fd, status, text);
  ::shutdown(w.fd, SHUT_WR);
  w.head = std::string();
  w.draining = kDrainBytes;
  w.deadline_ms = NowMs() + kDrainMs;
}

bool GatedHttpServer::read_some(Waiting& w) {
  char buf[4096];
  for (;;) {
    const size_t room = w.draining > 0 ? std::min(w.draining, sizeof buf) : kMaxHeadBytes - w.head.size();
    if (room == 0) {
      refuse(w, "431 Request Header Fields Too Large", "431 request line and header fields above 16384 bytes");
      return true;
    }
    const ssize_t n = ::recv(w.fd, buf, std::min(room, sizeof buf), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
    if (n <= 0 || (w.draining > 0 && (w.draining -= static_cast<size_t>(n)) == 0)) {  // closed, failed or drained
      Close(w.fd);
      return false;
    }
    if (w.draining > 0) continue;
    const size_t from = w.head.size() >= 3 ? w.head.size() - 3 : 0;
    w.head.append(buf, static_cast<size_t>(n));
    if (w.head.find("\r\n\r\n", from) == std::string::npos && w.head.find("\n\n", from) == std::string::npos)
      continue;
    if (answering_.fetch_add(1) >= kMaxAnswering) {
      answering_.fetch_sub(1);
      refuse(w, "503 Service Unavailable", "503 too many requests at once");
      return true;
    }
    workers_->enqueue([this, fd = w.fd, head = std::move(w.head)]() mutable {
      answer(fd, std::move(head));
      answering_.fetch_sub(1);
    });
    return false;
  }
}

void GatedHttpServer::answer(int fd, std::string head) {
  GateStream strm(fd, std::move(head), NowMs() + kAnswerTimeoutMs);
  bool closed = false;
  (void)process_request(strm, true, closed, nullptr);
  Close(fd);
}

}  // namespace fedrt::net
