#pragma once
// The families a client build runs: a template argument of the client
// session, so that a build without a family links none of its code and
// refuses its tasks. Device code.

#include <cstdint>

#include "fedrt/task/task.h"

namespace fedrt::protocol {

// Families compiled into a client, one bit per task::Family.
enum FamilySet : uint32_t {
  kFamilyLsa = 1u << static_cast<unsigned>(task::Family::kLsa),
  kFamilyOpt = 1u << static_cast<unsigned>(task::Family::kOpt),
  kFamilyEm = 1u << static_cast<unsigned>(task::Family::kEm),
  kAllFamilies = kFamilyLsa | kFamilyOpt | kFamilyEm,
};
constexpr bool Has(uint32_t set, task::Family f) { return (set >> static_cast<unsigned>(f)) & 1u; }

}  // namespace fedrt::protocol
