// The coordinator's operator side (docs/dashboard.md): devices provisioned
// or revoked in the keys folder while the run goes on, and the HTTP endpoint
// of the dashboard, JSON and metrics.
#include <fmt/format.h>

#include "coordinator_impl.h"
#include "fedrt/coordinator/log.h"

namespace fedrt::net::detail {

// The keys folder, once a second: devices provisioned or revoked while running.
void Coordinator::watch_keys() {
  keys_timer_.expires_after(std::chrono::seconds(1));
  keys_timer_.async_wait([this](const std::error_code& ec) {
    if (ec || finished_) return;
    refusals_.flush(std::chrono::steady_clock::now());  // this second's ended intervals: their summaries
    auto changes = keys_->poll();
    if (changes.ok()) apply_keys(*changes);
    else CoordinatorWarn("keys error={} (the fleet keeps the keys it has)", changes.status().message());
    after_event();
    watch_keys();
  });
}

void Coordinator::apply_keys(const KeysWatch::Changes& changes) {
  if (changes.registry) {
    std::vector<std::string> conflicts;
    std::vector<RegistryEntry> rotated;
    for (const RegistryEntry& e : registry_.merge(changes.entries, &conflicts, &rotated)) {
      tls_.add_psk(e.id, e.psk);
      monitor_->provisioned(e.index, e.id);
      CoordinatorLog("provisioned device={} index={} (keys add: it may join now)", e.id, e.index);
    }
    for (const std::string& c : conflicts) CoordinatorWarn("keys ignored: {}", c);
    // keys rotate: the old PSK is refused from now on and the device's connection is dropped, so it
    // comes back with the new one. (A certificate device's old certificate still chains to the CA:
    // dropping it only makes it reconnect; `keys revoke` is what shuts it out.)
    for (const RegistryEntry& e : rotated) {
      tls_.add_psk(e.id, e.psk);
      CoordinatorWarn("rotated device={} index={} (keys rotate: its old PSK is refused from now on)", e.id, e.index);
      if (Connection* c = registry_.connection(e.index)) {
        CoordinatorWarn("dropped device={} index={} peer={} reason=keys rotated", e.id, e.index, c->peer());
        c->close("keys rotated");
      }
      gateway_key(e.index, e);  // its gateway takes the new PSK and drops it too
    }
  }
  if (changes.revoked)
    for (const Revocation& r : changes.revocations) revoke(r);
}

// `keys revoke`: recorded, refused at every later handshake, dropped now if connected.
void Coordinator::revoke(const Revocation& r) {
  if (registry_.revoked(r.id) != nullptr) return;
  registry_.revoke(r.id, r.reason);
  Status st = store_->record_revocation(r);
  if (!st.ok()) CoordinatorWarn("state db: revocation of {} not recorded: {}", r.id, st.message());
  const auto idx = registry_.index_of(r.id);
  CoordinatorWarn("revoked device={} index={} reason={}", r.id, idx ? std::to_string(*idx) : std::string("none"),
                  r.reason);
  if (!idx) return;
  const uint32_t agent = *idx;
  monitor_->link(agent, FleetMonitor::Link::kRevoked, r.reason);
  (void)store_->upsert_device(r.id, agent, "revoked: " + r.reason);
  const bool was_ready = registry_.state(agent) == Registry::State::kReady;
  registry_.set_state(agent, Registry::State::kRefused, "revoked: " + r.reason);
  if (was_ready) rounds_.set_connected(agent, false, now_ms());
  rounds_.set_refused(agent, now_ms());
  if (Connection* c = registry_.connection(agent)) {
    CoordinatorWarn("dropped device={} index={} peer={} reason=revoked", r.id, agent, c->peer());
    c->send_error(wire::ERROR_IDENTITY, fmt::format("device '{}' is revoked: {}", r.id, r.reason), true);
  } else if (routed(agent)) {  // its gateway drops it and refuses it from then on
    CoordinatorWarn("dropped device={} index={} via={} reason=revoked", r.id, agent, gateways_[via_[agent]].id);
    wire::Envelope e;
    e.mutable_error()->set_reason(wire::ERROR_IDENTITY);
    e.mutable_error()->set_message(fmt::format("device '{}' is revoked: {}", r.id, r.reason));
    relay(agent, e);
    via_[agent] = -1;
  }
  maybe_start(false);
}

// --http: the dashboard, the JSON endpoints and /metrics on threads of their own.
Status Coordinator::serve_http() {
  if (opt_.network.http.empty()) return Status::Ok();
  HttpOptions ho;
  FEDRT_TRY(ParseHttpAddress(opt_.network.http, &ho.host, &ho.port));
  const bool open = IsLoopbackAddress(ho.host);
  if (!open) {
    auto token = LoadOrCreateHttpToken(opt_.network.keys);
    if (!token.ok()) return token.status();
    ho.token = *token;
  }
  auto ep = HttpEndpoint::Start(ho, *monitor_);
  if (!ep.ok()) return ep.status();
  http_ = std::move(*ep);
  const std::string host = ho.host.find(':') != std::string::npos ? "[" + ho.host + "]" : ho.host;
  CoordinatorLog("dashboard url=http://{}:{}/ metrics=http://{}:{}/metrics{}", host, http_->port(), host,
                 http_->port(),
                 open ? std::string() : fmt::format(" token={}/http.token (bearer, or open /?token=TOKEN)",
                                                    opt_.network.keys));
  return Status::Ok();
}

}  // namespace fedrt::net::detail
