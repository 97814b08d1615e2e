#include "fedrt/problems/td_oracles.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "fedrt/core/arena.h"
#include "fedrt/problems/agent_chunks.h"

namespace fedrt::problems {

Status BuildTdOracles(const TdProblem& p, int threads, TdOracleTables& out) {
  using Oracle = TdOracle<double>;
  const int n = p.agents();
  // Pass 1: each agent's kept atoms (the rule create_shared applies), so
  // every alias table gets exactly its bytes at a fixed offset.
  std::vector<uint32_t> atoms(static_cast<size_t>(n));
  ForAgentsInChunks(n, threads, [&](int c) { atoms[c] = Oracle::KeptAtoms(p.joint_law(c).data(), p.n_states); });
  std::vector<size_t> offset(static_cast<size_t>(n) + 1, 0);
  size_t scratch = 0;
  for (int c = 0; c < n; ++c) {
    offset[c + 1] = offset[c] + Oracle::KeptBytes(atoms[c]);
    scratch = std::max(scratch, Oracle::KeptBytes(atoms[c]) + Oracle::ScratchBytes(atoms[c]));
  }
  out.memory.assign(offset[n], 0);
  out.oracles.assign(static_cast<size_t>(n), Oracle{});
  std::vector<Status> errors(static_cast<size_t>(n), Status::Ok());
  // Pass 2: agent c's table is built in its thread's scratch arena, then
  // copied to its slot (the same bytes wherever it was built).
  ForAgentsInChunks(n, threads, [&](int c) {
    thread_local std::vector<uint8_t> work;
    if (work.size() < scratch) work.assign(scratch, 0);
    Arena arena(work.data(), work.size());
    const std::vector<double> joint = p.joint_law(c);
    auto o = Oracle::create_shared(arena, p.dim, p.n_states, p.gamma, p.phi.data(), p.reward[c].data(), joint.data());
    if (!o.ok()) {
      errors[c] = Status(o.status().code(), fmt::format("agent {}: {}", c, o.status().message()));
      return;
    }
    Arena slot(out.memory.data() + offset[c], offset[c + 1] - offset[c]);
    auto table = slot.allocate<TdTransition<double>>(o->atoms());
    if (!table.ok()) {
      errors[c] = table.status();
      return;
    }
    std::memcpy(table->data, o->alias_table(), sizeof(TdTransition<double>) * o->atoms());
    out.oracles[c] = Oracle::FromTables(p.dim, o->gamma(), p.phi.data(), table->data, o->atoms());
  });
  out.max_atoms = 0;
  for (int c = 0; c < n; ++c) {
    if (!errors[c].ok()) return errors[c];  // the first agent's error, as a serial build reports
    out.max_atoms = std::max(out.max_atoms, static_cast<int>(atoms[c]));
  }
  return Status::Ok();
}

}  // namespace fedrt::problems
