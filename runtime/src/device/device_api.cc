// fedrt::Device (fedrt/device.h) over the device driver's session and
// connection (device/session.h, device/connection.h).
#include "fedrt/device.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "fedrt/device/driver.h"
#include "fedrt/device/connection.h"
#include "fedrt/device/log.h"
#include "fedrt/device/session.h"

namespace fedrt {

struct Device::Impl {
  net::DeviceOptions options;
  std::function<void(const RoundReport&)> callback;
  std::unique_ptr<net::DeviceLog> log;
  std::unique_ptr<net::DeviceSession> session;
  std::unique_ptr<net::DeviceConnection> connection;
  std::atomic<bool> cancel{false};
  std::mutex mu;
  std::condition_variable idle;
  bool running = false;
  std::thread::id runner;

  // One pump under the running flag; stop() waits for it to clear.
  Status pump(bool until_round, net::PumpEnd* end) {
    {
      std::lock_guard<std::mutex> lock(mu);
      running = true;
      runner = std::this_thread::get_id();
    }
    Status st = connection->pump(until_round, cancel, end);
    std::lock_guard<std::mutex> lock(mu);
    if (*end == net::PumpEnd::kCancelled) cancel = false;  // consumed
    running = false;
    idle.notify_all();
    return st;
  }
};

Device::Device(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Device::~Device() {
  stop();
  if (impl_->connection) impl_->connection->close();
}

Result<std::unique_ptr<Device>> Device::Create(const DeviceConfig& config) {
  auto impl = std::make_unique<Impl>();
  FEDRT_TRY(net::DeviceOptionsFromConfig(config, impl->options));
  Impl* raw = impl.get();
  impl->options.progress = [raw](const RoundReport& r) {
    if (raw->callback) raw->callback(r);
  };
  impl->log = std::make_unique<net::DeviceLog>(impl->options.id, impl->options.log_level, false);
  impl->session = std::make_unique<net::DeviceSession>(impl->options, *impl->log);
  impl->connection = std::make_unique<net::DeviceConnection>(impl->options, *impl->log, *impl->session);
  FEDRT_TRY(impl->connection->init());
  FEDRT_TRY(impl->session->init());
  return std::unique_ptr<Device>(new Device(std::move(impl)));
}

Status Device::run() {
  net::PumpEnd end = net::PumpEnd::kShutdown;
  Status st = impl_->pump(/*until_round=*/false, &end);
  if (st.ok() && end == net::PumpEnd::kCancelled) return Status(StatusCode::kCancelled, "stopped by stop()");
  return st;
}

Result<RoundReport> Device::run_one_round() {
  net::PumpEnd end = net::PumpEnd::kShutdown;
  Status st = impl_->pump(/*until_round=*/true, &end);
  if (!st.ok()) return st;
  if (end == net::PumpEnd::kCancelled) return Status(StatusCode::kCancelled, "stopped by stop()");
  if (end == net::PumpEnd::kShutdown) return Status(StatusCode::kOutOfRange, "the coordinator ended the experiment");
  RoundReport r;
  (void)impl_->session->take_settled(&r);
  return r;
}

void Device::stop() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->cancel = true;
  if (impl_->running && impl_->runner == std::this_thread::get_id()) return;  // from the progress callback
  if (!impl_->running) return;  // the next run returns at once
  impl_->idle.wait(lock, [this] { return !impl_->running; });
  impl_->cancel = false;  // that run ended (by this stop, or on its own at the same time)
}

void Device::on_progress(std::function<void(const RoundReport&)> callback) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->callback = std::move(callback);
}

}  // namespace fedrt
