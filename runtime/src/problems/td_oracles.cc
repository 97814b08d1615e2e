#include "fedrt/problems/td_oracles.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "fedrt/core/arena.h"
#include "fedrt/core/worker_pool.h"

namespace fedrt::problems {

Status BuildTdOracles(const TdProblem& p, int threads, TdOracleTables& out) {
  using Oracle = TdOracle<double>;
  const int n = p.agents();
  // Pass 1: each agent's kept atoms (the rule create_shared applies), so
  // every alias table gets exactly its bytes at a fixed offset.
  WorkerPool pool(WorkerPool::ThreadsFor(static_cast<size_t>(n), threads, 512));
  std::vector<uint32_t> atoms(static_cast<size_t>(n));
  pool.parallel_for(static_cast<size_t>(n), [&](size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) atoms[c] = Oracle::KeptAtoms(p.joint_law(static_cast<int>(c)).data(), p.n_states);
  });
  std::vector<size_t> offset(static_cast<size_t>(n) + 1, 0);
  size_t scratch = 0;
  for (int c = 0; c < n; ++c) {
    offset[c + 1] = offset[c] + Oracle::KeptBytes(atoms[c]);
    scratch = std::max(scratch, Oracle::KeptBytes(atoms[c]) + Oracle::ScratchBytes(atoms[c]));
  }
  out.memory.assign(offset[n], 0);
  out.oracles.assign(static_cast<size_t>(n), Oracle{});
  std::vector<Status> errors(static_cast<size_t>(n), Status::Ok());
  // Pass 2: agent c's table is built in its chunk's scratch arena, then
  // copied to its slot (the same bytes wherever it was built).
  auto build = [&](int c, std::vector<uint8_t>& work) -> Status {
    Arena arena(work.data(), work.size());
    const std::vector<double> joint = p.joint_law(c);
    auto o = Oracle::create_shared(arena, p.dim, p.n_states, p.gamma, p.phi.data(), p.reward[c].data(), joint.data());
    if (!o.ok()) return Status(o.status().code(), fmt::format("agent {}: {}", c, o.status().message()));
    Arena slot(out.memory.data() + offset[c], offset[c + 1] - offset[c]);
    auto table = slot.allocate<TdTransition<double>>(o->atoms());
    if (!table.ok()) return table.status();
    std::memcpy(table->data, o->alias_table(), sizeof(TdTransition<double>) * o->atoms());
    out.oracles[c] = Oracle::FromTables(p.dim, o->gamma(), p.phi.data(), table->data, o->atoms());
    return Status::Ok();
  };
  pool.parallel_for(static_cast<size_t>(n), [&](size_t b, size_t e) {
    std::vector<uint8_t> work(scratch, 0);
    for (size_t c = b; c < e; ++c) errors[c] = build(static_cast<int>(c), work);
  });
  out.max_atoms = 0;
  for (int c = 0; c < n; ++c) {
    if (!errors[c].ok()) return errors[c];  // the first agent's error, as a serial build reports
    out.max_atoms = std::max(out.max_atoms, static_cast<int>(atoms[c]));
  }
  return Status::Ok();
}

}  // namespace fedrt::problems
