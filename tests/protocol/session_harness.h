#pragma once
// Hand-driven round protocol for the protocol tests: N agents of synthetic
// least squares and their client sessions, one server session, messages
// passed by hand.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fedrt/task/task.h"
#include "fedrt/problems/fed_data.h"
#include "fedrt/problems/least_squares.h"
#include "fedrt/protocol/client_session.h"
#include "fedrt/protocol/server_session.h"

namespace fedrt::protocol::session_testing {

using task::AlgorithmKind;
using Client = ClientSession<double>;

// N agents of synthetic least squares (d = 4) and their oracles.
struct Fleet {
  static constexpr uint32_t kAgents = 6;
  static constexpr int kDim = 4;
  problems::FedDataset data;
  std::vector<uint8_t> oracle_memory = std::vector<uint8_t>(1 << 16);
  std::vector<problems::LeastSquaresOracle<double>> oracles;
  std::vector<problems::LocalProblem<double>> local;
  task::Task task;

  explicit Fleet(AlgorithmKind kind, bool rr = false) {
    problems::FedDataConfig g;
    g.agents = kAgents;
    g.dim = kDim;
    g.samples = 30;
    g.concept_shift = 0.5;
    data = *problems::GenerateFedData(problems::FedLoss::kLeastSquares, g);
    Arena arena(oracle_memory.data(), oracle_memory.size());
    for (uint32_t c = 0; c < kAgents; ++c)
      oracles.push_back(*problems::LeastSquaresOracle<double>::create(
          arena, kDim, static_cast<uint32_t>(data.x[c].rows()), data.x[c].data(), data.y[c].data(), 1.0));
    local.resize(kAgents);
    for (uint32_t c = 0; c < kAgents; ++c) local[c].least_squares = &oracles[c];
    task.problem.kind = task::ProblemKind::kLeastSquares;
    task.problem.agents = kAgents;
    task.problem.dim = kDim;
    task.num_algorithms = 1;
    task.algorithms[0] = task::AlgorithmChoice{kind, rr};
    task.hyper.step = 0.05;
    task.hyper.local_steps = 5;
    task.hyper.batch = 2;
    task.rounds = 4;
  }
  void dither(bool memory) {
    task.compression.quantizer.kind = compression::QuantizerKind::kDither;
    task.compression.quantizer.levels = 4;
    task.compression.control_variates = memory;
  }
};

// One server and one client per agent, messages passed by hand.
class Sessions {
 public:
  Sessions(const Fleet& f, uint32_t deadline_ms = 0, double quorum = 1.0, EntropyFn entropy = nullptr,
           void* entropy_ctx = nullptr)
      : f_(f) {
    ServerOptions so;
    so.task = f.task;
    const std::vector<double> zero(Fleet::kDim, 0.0);
    so.initial = View<double>{zero.data(), Fleet::kDim};
    so.deadline_ms = deadline_ms;
    so.quorum = quorum;
    EXPECT_TRUE(server.init(so).ok());
    const size_t per = (Client::WorkspaceBytes(f.task, 0) + 63) & ~size_t(63);
    memory_.assign(per * Fleet::kAgents, 0);
    clients.reset(new Client[Fleet::kAgents]);
    for (uint32_t c = 0; c < Fleet::kAgents; ++c) {
      Arena a(memory_.data() + per * c, per);
      Client::Options o;
      o.task = &f.task;
      o.agent = c;
      o.problem = f.local[c];
      o.entropy = entropy;  // SecAgg+ secrets (secure tasks)
      o.entropy_ctx = entropy_ctx;
      EXPECT_TRUE(clients[c].init(a, o).ok());
      server.set_connected(c, true, 0);
    }
  }
  // Opens round t and returns every agent's reply (in agent order).
  std::vector<std::pair<uint32_t, ClientMessage>> announce(uint32_t t, uint64_t now = 0) {
    EXPECT_TRUE(server.open_round(t, now).ok());
    std::vector<std::pair<uint32_t, ClientMessage>> replies;
    Outgoing out;
    while (server.next_outgoing(out)) {
      ClientMessage r;
      EXPECT_TRUE(clients[out.agent].on_announce(server.announcement(out.agent, now), r).ok());
      if (r.kind != MessageKind::kNone) replies.emplace_back(out.agent, r);
    }
    return replies;
  }
  void publish() {
    server.publish();
    Outgoing out;
    while (server.next_outgoing(out)) ASSERT_TRUE(clients[out.agent].on_result(server.result(out.agent)).ok());
  }
  std::vector<double> state() const {
    std::vector<double> s;
    server.export_state(s);
    return s;
  }

  ServerSession server;
  std::unique_ptr<Client[]> clients;

 private:
  const Fleet& f_;
  std::vector<uint8_t> memory_;
};

}  // namespace fedrt::protocol::session_testing
