#include "fedrt/wire/gateway_codec.h"

#include <cmath>

#include <fmt/format.h>

#include "fedrt/core/exact_sum_pieces.h"
#include "fedrt/task/limits.h"

namespace fedrt::wire {

namespace {

template <class M>
void SetLinkId(const protocol::RoundId& id, M* m) {
  m->set_algorithm_index(id.algorithm);
  m->set_run(id.run);
  m->set_round(id.round);
}
template <class M>
protocol::RoundId LinkIdOf(const M& m) {
  return protocol::RoundId{m.algorithm_index(), m.run(), m.round()};
}
void Put(const protocol::WorkReport& r, WorkReport* w) {
  w->set_loss_before(r.loss_before);
  w->set_loss_after(r.loss_after);
  w->set_duration_ms(r.duration_ms);
  w->set_examples(r.examples);
}
protocol::WorkReport Get(const WorkReport& w) {
  protocol::WorkReport r;
  r.loss_before = w.loss_before();
  r.loss_after = w.loss_after();
  r.duration_ms = w.duration_ms();
  r.examples = w.examples();
  return r;
}
template <class T, class R>
std::vector<T> Vec(const R& field) {
  return std::vector<T>(field.begin(), field.end());
}

}  // namespace

void Encode(const protocol::Partial& p, PartialAggregate* out) {
  SetLinkId(p.id, out);
  for (uint32_t c : p.members) out->add_members(c);
  for (const auto& r : p.reports) Put(r, out->add_reports());
  for (uint64_t s : p.samples) out->add_samples(s);
  out->set_indicators(std::string(p.indicators.begin(), p.indicators.end()));
  out->set_bits_up(p.bits_up);
  for (uint32_t c : p.unclipped) out->add_unclipped(c);
  for (uint32_t c : p.over_norm) out->add_over_norm(c);
  out->set_failure(p.failure);
  for (const protocol::PartialSum& s : p.sums) {
    PartialSum* w = out->add_sums();
    w->set_size(s.size);
    w->mutable_layers()->Add(s.layers.begin(), s.layers.end());
  }
  out->mutable_integer_sums()->Add(p.integer_sums.begin(), p.integer_sums.end());
  out->mutable_bytes_down()->Add(p.bytes_down.begin(), p.bytes_down.end());
  out->mutable_bytes_up()->Add(p.bytes_up.begin(), p.bytes_up.end());
}

Status Decode(const PartialAggregate& in, protocol::Partial& out) {
  out = protocol::Partial{};
  out.id = LinkIdOf(in);
  out.members = Vec<uint32_t>(in.members());
  for (const WorkReport& r : in.reports()) out.reports.push_back(Get(r));
  out.samples = Vec<uint64_t>(in.samples());
  out.indicators.assign(in.indicators().begin(), in.indicators().end());
  out.bits_up = in.bits_up();
  out.unclipped = Vec<uint32_t>(in.unclipped());
  out.over_norm = Vec<uint32_t>(in.over_norm());
  if (in.failure().size() > 1024) return Status::InvalidArgument("partial: a failure longer than 1024 characters");
  out.failure = in.failure();
  if (in.sums_size() > static_cast<int>(2 * task::kMaxSegments))
    return Status(StatusCode::kInvalidArgument, fmt::format("partial: {} sums", in.sums_size()));
  for (const PartialSum& s : in.sums()) {
    const size_t n = s.size();
    if ((n == 0 && s.layers_size() != 0) || (n > 0 && static_cast<size_t>(s.layers_size()) % n != 0) ||
        (n > 0 && static_cast<size_t>(s.layers_size()) / n > static_cast<size_t>(kMaxSumPieces)))
      return Status(StatusCode::kInvalidArgument, fmt::format("partial: a sum of {} values for {} coordinates", s.layers_size(), n));
    out.sums.push_back(protocol::PartialSum{s.size(), Vec<double>(s.layers())});
  }
  out.integer_sums = Vec<uint64_t>(in.integer_sums());
  out.bytes_down = Vec<uint64_t>(in.bytes_down());
  out.bytes_up = Vec<uint64_t>(in.bytes_up());
  return Status::Ok();
}

void Encode(const protocol::MaskedSum& m, MaskedSum* out) {
  SetLinkId(m.id, out);
  for (uint32_t c : m.members) out->add_members(c);
  for (const auto& r : m.reports) Put(r, out->add_reports());
  out->mutable_sum()->Add(m.sum.begin(), m.sum.end());
  out->mutable_bytes_down()->Add(m.bytes_down.begin(), m.bytes_down.end());
  out->mutable_bytes_up()->Add(m.bytes_up.begin(), m.bytes_up.end());
}

Status Decode(const MaskedSum& in, protocol::MaskedSum& out) {
  out = protocol::MaskedSum{};
  out.id = LinkIdOf(in);
  out.members = Vec<uint32_t>(in.members());
  for (const WorkReport& r : in.reports()) out.reports.push_back(Get(r));
  out.sum = Vec<uint32_t>(in.sum());
  out.bytes_down = Vec<uint64_t>(in.bytes_down());
  out.bytes_up = Vec<uint64_t>(in.bytes_up());
  return Status::Ok();
}

void Encode(const protocol::RoundBasis& b, GatewayRound* out) {
  SetLinkId(b.id, out);
  out->mutable_state()->Add(b.state.begin(), b.state.end());
  out->set_down_version(b.down_version);
  for (const auto& d : b.down_delta) out->add_down_delta(std::string(d.begin(), d.end()));
  out->set_deadline_ms(b.deadline_ms);
  out->set_secure(b.secure);
  for (uint32_t c : b.refused) out->add_refused(c);
}

Status Decode(const GatewayRound& in, protocol::RoundBasis& out) {
  out = protocol::RoundBasis{};
  out.id = LinkIdOf(in);
  out.state = Vec<double>(in.state());
  for (double x : out.state)
    if (!std::isfinite(x)) return Status::InvalidArgument("round: the server state has a NaN or Inf value");
  out.down_version = in.down_version();
  if (in.down_delta_size() > static_cast<int>(task::kMaxSegments))
    return Status(StatusCode::kInvalidArgument, fmt::format("round: {} downlink deltas", in.down_delta_size()));
  for (const std::string& d : in.down_delta()) out.down_delta.emplace_back(d.begin(), d.end());
  out.deadline_ms = in.deadline_ms();
  out.secure = in.secure();
  out.refused = Vec<uint32_t>(in.refused());
  return Status::Ok();
}

void Encode(const protocol::RoundVerdict& v, GatewayResult* out) {
  SetLinkId(v.id, out);
  for (uint32_t c : v.included) out->add_included(c);
  out->mutable_model()->Add(v.model.begin(), v.model.end());
}

Status Decode(const GatewayResult& in, protocol::RoundVerdict& out) {
  out = protocol::RoundVerdict{};
  out.id = LinkIdOf(in);
  out.included = Vec<uint32_t>(in.included());
  out.model = Vec<double>(in.model());
  for (double x : out.model)
    if (!std::isfinite(x)) return Status::InvalidArgument("result: the model has a NaN or Inf value");
  return Status::Ok();
}

void Wrap(const GatewayEnvelope& g, Envelope& env) {
  env.Clear();
  g.SerializeToString(env.mutable_gateway());
}

bool Unwrap(const Envelope& env, GatewayEnvelope& g, std::string& why) {
  if (env.gateway().empty()) {
    why = "not a gateway-link message";
    return false;
  }
  if (!g.ParseFromString(env.gateway())) {
    why = fmt::format("undecodable gateway-link message ({} bytes)", env.gateway().size());
    return false;
  }
  if (g.body_case() == GatewayEnvelope::BODY_NOT_SET) {
    why = "empty or unknown gateway-link message";
    return false;
  }
  return true;
}

}  // namespace fedrt::wire
