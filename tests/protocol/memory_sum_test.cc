// The server's compression memories (docs/algorithms.md 4): it keeps only
// W = sum_c V_c over all N agents, never a vector per device. With partial
// participation W stays the sum of the clients' memories V_c, because a client
// moves V_c only when its round result says it was included and the server
// adds alpha m_c for exactly those clients; the server's state does not grow
// with N.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "session_harness.h"

namespace fedrt::protocol {
namespace {

using task::AlgorithmKind;
using session_testing::Fleet;
using session_testing::Sessions;

struct Case {
  const char* name;
  AlgorithmKind kind;
  bool rr;
  compression::QuantizerKind quantizer;
};

// sum_c V_c of segment k over every client.
std::vector<double> ClientMemorySum(const Sessions& s, uint32_t k) {
  const int seg = s.clients[0].shape().segment_dim;
  std::vector<double> sum(static_cast<size_t>(seg), 0.0);
  for (uint32_t c = 0; c < Fleet::kAgents; ++c) {
    const double* v = s.clients[c].coder(k).memory();
    for (int i = 0; i < seg; ++i) sum[i] += v[i];
  }
  return sum;
}

TEST(MemorySum, EqualsTheClientsMemoriesWithPartialParticipation) {
  const Case cases[] = {
      {"fedavg dither", AlgorithmKind::kFedAvg, false, compression::QuantizerKind::kDither},
      {"scaffold + rr dither (2 chains of 2d)", AlgorithmKind::kScaffold, true, compression::QuantizerKind::kDither},
      {"fedavg rounding (integer uplink)", AlgorithmKind::kFedAvg, false, compression::QuantizerKind::kRounding},
  };
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.name);
    Fleet f(cs.kind, cs.rr);
    f.dither(/*memory=*/true);
    f.task.compression.quantizer.kind = cs.quantizer;
    f.task.compression.quantizer.bits = 10;
    f.task.compression.quantizer.clip = 4.0;
    f.task.participation = 0.5;
    f.task.rounds = 12;
    Sessions s(f);
    const ServerUplink& up = s.server.uplink();
    ASSERT_TRUE(up.keeps_sum());
    EXPECT_EQ(up.mode(), cs.quantizer == compression::QuantizerKind::kRounding ? ServerUplink::Mode::kInteger
                                                                              : ServerUplink::Mode::kCoded);
    const uint32_t chains = s.server.core().chains();
    const int seg = s.server.core().segment_dim();
    ASSERT_EQ(up.memory_sum().size(), static_cast<size_t>(chains) * seg);
    int partial = 0;
    for (uint32_t t = 0; t < f.task.rounds; ++t) {
      auto replies = s.announce(t);
      for (auto& [c, r] : replies) ASSERT_TRUE(s.server.on_update(c, r.update, 0).ok()) << "round " << t;
      ASSERT_TRUE(s.server.round_closed()) << "round " << t;
      const size_t members = s.server.commit().members.size();
      partial += members > 0 && members < Fleet::kAgents ? 1 : 0;
      s.publish();
      for (uint32_t k = 0; k < chains; ++k) {
        const std::vector<double> v = ClientMemorySum(s, k);
        double diff = 0, scale = 0;
        for (int i = 0; i < seg; ++i) {
          diff = std::max(diff, std::abs(up.memory_sum()[static_cast<size_t>(k) * seg + i] - v[i]));
          scale = std::max(scale, std::abs(v[i]));
        }
        EXPECT_LE(diff, 1e-12 * std::max(scale, 1.0)) << "round " << t << " chain " << k;
        if (t + 1 == f.task.rounds) {
          EXPECT_GT(scale, 0.0) << "the memories moved";
        }
      }
    }
    EXPECT_GE(partial, f.task.rounds / 2) << "the rounds must sample part of the agents";
  }
}

// The coordinator's memory is O(d) in N: the uplink keeps W (chains x
// segment_dim values) and the session's persisted state has the same size
// for 6 and for 6000 agents.
TEST(MemorySum, ServerStateDoesNotGrowWithTheAgents) {
  for (compression::QuantizerKind q : {compression::QuantizerKind::kDither, compression::QuantizerKind::kRounding}) {
    std::vector<size_t> sizes;
    for (uint32_t n : {6u, 600u, 6000u}) {
      Fleet f(AlgorithmKind::kScaffold);
      f.dither(/*memory=*/true);
      f.task.compression.quantizer.kind = q;
      f.task.participation = 0.5;
      f.task.problem.agents = n;
      ServerSession server;
      ServerOptions so;
      so.task = f.task;
      const std::vector<double> zero(Fleet::kDim, 0.0);
      so.initial = View<double>{zero.data(), Fleet::kDim};
      ASSERT_TRUE(server.init(so).ok());
      EXPECT_EQ(server.uplink().memory_sum().size(), static_cast<size_t>(2 * Fleet::kDim)) << n;
      std::vector<double> state;
      server.export_state(state);
      sizes.push_back(state.size());
    }
    EXPECT_EQ(sizes[0], sizes[1]);
    EXPECT_EQ(sizes[0], sizes[2]);
  }
}

}  // namespace
}  // namespace fedrt::protocol
