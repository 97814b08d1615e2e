#pragma once
// The gateway link on the wire (runtime/wire/fedrt_gateway.proto,
// docs/gateways.md): protocol::Partial, MaskedSum, RoundBasis and
// RoundVerdict to and from their messages, and a GatewayEnvelope in and out
// of an Envelope. Decoding maps fields and refuses what cannot be a message
// of the link (sizes that do not align, a sum's layers that are not whole);
// what they mean is checked by the server session (ServerSession::on_partial,
// on_masked_sum). Host code.

#include <string>

#include "fedrt.pb.h"
#include "fedrt_gateway.pb.h"
#include "fedrt/core/status.h"
#include "fedrt/protocol/partial.h"

namespace fedrt::wire {

void Encode(const protocol::Partial& p, PartialAggregate* out);
Status Decode(const PartialAggregate& in, protocol::Partial& out);
void Encode(const protocol::MaskedSum& m, MaskedSum* out);
Status Decode(const MaskedSum& in, protocol::MaskedSum& out);
void Encode(const protocol::RoundBasis& b, GatewayRound* out);
Status Decode(const GatewayRound& in, protocol::RoundBasis& out);
void Encode(const protocol::RoundVerdict& v, GatewayResult* out);
Status Decode(const GatewayResult& in, protocol::RoundVerdict& out);

// A GatewayEnvelope as the `gateway` field of an Envelope, and back (false
// with the reason when the bytes are not one).
void Wrap(const GatewayEnvelope& g, Envelope& env);
bool Unwrap(const Envelope& env, GatewayEnvelope& g, std::string& why);

}  // namespace fedrt::wire
