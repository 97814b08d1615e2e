#pragma once
// Vector and matrix views over caller-owned memory. Device code never owns an
// Eigen object with dynamic storage: it maps arena memory, with the dimension
// either fixed at compile time (D > 0, e.g. d = 8 for Garnet) or Eigen::Dynamic.

#include <Eigen/Core>

namespace fedrt {

// Default scalar: float on microcontrollers, double in the simulator.
#if defined(FEDRT_SCALAR_FLOAT)
using Scalar = float;
#else
using Scalar = double;
#endif

template <class S, int D>
using Vec = Eigen::Matrix<S, D, 1>;
template <class S, int D>
using VecMap = Eigen::Map<Vec<S, D>, Eigen::Unaligned>;
template <class S, int D>
using ConstVecMap = Eigen::Map<const Vec<S, D>, Eigen::Unaligned>;
template <class S, int D>
using Mat = Eigen::Matrix<S, D, D, Eigen::RowMajor>;
template <class S, int D>
using ConstMatMap = Eigen::Map<const Mat<S, D>, Eigen::Unaligned>;

// Map `d` contiguous scalars as a D-vector (D may be Eigen::Dynamic).
template <int D, class S>
inline VecMap<S, D> MapVec(S* p, int d) {
  if constexpr (D == Eigen::Dynamic) return VecMap<S, D>(p, d);
  else return VecMap<S, D>(p);
}
template <int D, class S>
inline ConstVecMap<S, D> MapVec(const S* p, int d) {
  if constexpr (D == Eigen::Dynamic) return ConstVecMap<S, D>(p, d);
  else return ConstVecMap<S, D>(p);
}
template <int D, class S>
inline ConstMatMap<S, D> MapMat(const S* p, int d) {
  if constexpr (D == Eigen::Dynamic) return ConstMatMap<S, D>(p, d, d);
  else return ConstMatMap<S, D>(p);
}

// Calls f(std::integral_constant<int, D>) with D = d for the dimensions that
// have a compile-time-unrolled kernel, Eigen::Dynamic otherwise. Built with
// FEDRT_UNROLLED_DIM=D (the 96 KB firmware image, cmake/firmware_app.cmake),
// only d = D is unrolled: two instantiations instead of five.
template <class F>
inline decltype(auto) DispatchDim(int d, F&& f) {
#if defined(FEDRT_UNROLLED_DIM)
  if (d == FEDRT_UNROLLED_DIM) return f(std::integral_constant<int, FEDRT_UNROLLED_DIM>{});
  return f(std::integral_constant<int, Eigen::Dynamic>{});
#else
  switch (d) {
    case 2: return f(std::integral_constant<int, 2>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 8: return f(std::integral_constant<int, 8>{});
    case 16: return f(std::integral_constant<int, 16>{});
    default: return f(std::integral_constant<int, Eigen::Dynamic>{});
  }
#endif
}

}  // namespace fedrt
