#include "fedrt/report/evaluation.h"

#include "fedrt/report/family_evaluations.h"

namespace fedrt::report {

Result<std::unique_ptr<Evaluation>> Evaluation::Make(const task::Task& task, const problems::DataFiles& files,
                                                     const problems::Instance& instance, WorkerPool* pool) {
  switch (task::FamilyOf(task.problem.kind)) {
    case task::Family::kLsa: return MakeLsaEvaluation(task, files, instance);
    case task::Family::kOpt:
      if (task.problem.kind == task::ProblemKind::kUser) return MakeUserEvaluation(task, files);
      if (instance.fed() == nullptr) return MakeBlindEvaluation(task, files, instance);
      return MakeOptEvaluation(task, files, instance);
    case task::Family::kEm: return MakeEmEvaluation(task, files, instance, pool);
  }
  return Status::Unimplemented("evaluation: unknown problem family");
}

}  // namespace fedrt::report
