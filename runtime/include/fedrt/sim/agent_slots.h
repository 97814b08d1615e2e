#pragma once
// AgentSlots<T>: one T per agent of a range [lo, hi), indexed by the agent's
// id, so a rank of a distributed simulation holds only its own agents' state
// while the driver's code still says slots[agent]. Host code.

#include <cstdint>
#include <memory>

namespace fedrt::sim {

template <class T>
class AgentSlots {
 public:
  // Default-constructed slots for the agents [lo, hi).
  void reset(uint32_t lo, uint32_t hi) {
    lo_ = lo;
    items_.reset(new T[hi - lo]);
  }
  void assign(uint32_t lo, uint32_t hi, const T& value) {
    reset(lo, hi);
    for (uint32_t i = 0; i < hi - lo; ++i) items_[i] = value;
  }
  T& operator[](uint32_t agent) { return items_[agent - lo_]; }
  const T& operator[](uint32_t agent) const { return items_[agent - lo_]; }

 private:
  uint32_t lo_ = 0;
  std::unique_ptr<T[]> items_;
};

}  // namespace fedrt::sim
