// The lane kernel compiled with -mavx2 (CMakeLists.txt sets the flag on this
// file only; no -mfma, so every product and sum rounds as in the scalar
// kernel). Called only after the CPU reported AVX2 (td_lanes.cc).
#include "td_lanes_kernel.h"

namespace fedrt::sim {

bool TdLanesAvx2(problems::TdBlock<double>* const* blocks, int groups) { return LanesFor(blocks, groups); }

}  // namespace fedrt::sim
