// Reed-Solomon decoding of Shamir shares over GF(2^8) (Berlekamp-Welch), host code.
#include "fedrt/secagg/shamir_decode.h"

#include <array>
#include <utility>

#include <fmt/format.h>

#include "fedrt/secagg/shamir.h"

namespace fedrt::secagg {
namespace {

// Log and antilog tables of GF(2^8) with generator 3 (the server decodes
// what it is sent; it holds no secret in these tables' indices that the
// devices do not already reveal to it).
struct Field {
  std::array<uint8_t, 512> exp{};
  std::array<int, 256> log{};
  Field() {
    uint8_t v = 1;
    for (int i = 0; i < 255; ++i) {
      exp[i] = exp[i + 255] = v;
      log[v] = i;
      v = GfMul(v, 3);
    }
  }
  uint8_t mul(uint8_t a, uint8_t b) const { return a == 0 || b == 0 ? 0 : exp[log[a] + log[b]]; }
  uint8_t inv(uint8_t a) const { return exp[255 - log[a]]; }  // a != 0
};
const Field& F() {
  static const Field f;
  return f;
}

// p(x) with coefficients c[0..n) (c[0] the constant).
uint8_t Eval(const std::vector<uint8_t>& c, size_t n, uint8_t x) {
  uint8_t acc = 0;
  for (size_t k = n; k-- > 0;) acc = static_cast<uint8_t>(F().mul(acc, x) ^ c[k]);
  return acc;
}

// Solves A z = b (rows x cols, augmented in `a` as rows x (cols + 1)) for
// some z (free unknowns 0); false when inconsistent.
bool Solve(std::vector<uint8_t>& a, size_t rows, size_t cols, std::vector<uint8_t>& z) {
  const size_t w = cols + 1;
  std::vector<size_t> pivot_col;
  size_t r = 0;
  for (size_t c = 0; c < cols && r < rows; ++c) {
    size_t p = r;
    while (p < rows && a[p * w + c] == 0) ++p;
    if (p == rows) continue;
    if (p != r)
      for (size_t k = 0; k < w; ++k) std::swap(a[p * w + k], a[r * w + k]);
    const uint8_t inv = F().inv(a[r * w + c]);
    for (size_t k = c; k < w; ++k) a[r * w + k] = F().mul(a[r * w + k], inv);
    for (size_t q = 0; q < rows; ++q) {
      const uint8_t f = a[q * w + c];
      if (q == r || f == 0) continue;
      for (size_t k = c; k < w; ++k) a[q * w + k] ^= F().mul(f, a[r * w + k]);
    }
    pivot_col.push_back(c);
    ++r;
  }
  for (size_t q = r; q < rows; ++q)
    if (a[q * w + cols] != 0) return false;
  z.assign(cols, 0);
  for (size_t i = 0; i < pivot_col.size(); ++i) z[pivot_col[i]] = a[i * w + cols];
  return true;
}

// Berlekamp-Welch for one byte: the polynomial p (t coefficients) through all
// but at most e of the m points; false when there is none.
bool DecodeByte(const uint8_t* xs, const uint8_t* y, size_t m, uint32_t t, size_t e, std::vector<uint8_t>& p) {
  // Unknowns: q_0..q_{e+t-1}, then E's e_0..e_{e-1} (E monic of degree e).
  // Row i: sum_k q_k x_i^k + y_i sum_l e_l x_i^l = y_i x_i^e  (char 2: minus is plus).
  const size_t nq = e + t, cols = nq + e;
  std::vector<uint8_t> a(m * (cols + 1), 0);
  for (size_t i = 0; i < m; ++i) {
    uint8_t* row = &a[i * (cols + 1)];
    uint8_t pw = 1;
    for (size_t k = 0; k < nq; ++k) {
      row[k] = pw;
      if (k < e) row[nq + k] = F().mul(y[i], pw);
      if (k == e) row[cols] = F().mul(y[i], pw);
      pw = F().mul(pw, xs[i]);
    }
  }
  std::vector<uint8_t> z;
  if (!Solve(a, m, cols, z)) return false;
  // p = Q / E by long division (E monic); a nonzero remainder means too many errors.
  std::vector<uint8_t> q(z.begin(), z.begin() + nq), ecoef(z.begin() + nq, z.end());
  ecoef.push_back(1);
  p.assign(t, 0);
  for (size_t d = nq; d-- > e;) {
    const uint8_t lead = q[d];
    p[d - e] = lead;
    if (lead == 0) continue;
    for (size_t k = 0; k <= e; ++k) q[d - e + k] ^= F().mul(lead, ecoef[k]);
  }
  for (size_t k = 0; k < e; ++k)
    if (q[k] != 0) return false;
  size_t wrong = 0;
  for (size_t i = 0; i < m; ++i) wrong += Eval(p, t, xs[i]) != y[i];
  return wrong <= e;
}

// The shares not yet found wrong, when at least m - e of them: Lagrange
// weights from the first t of them to the others and to 0, rebuilt when the
// set changes, so each further byte costs O(t m) instead of a decode.
class Agreement {
 public:
  // True (and `at0` = p(0)) when every share not in `bad` lies on one polynomial.
  bool agree(const uint8_t* xs, const uint8_t* y, const std::vector<uint8_t>& bad, size_t m, uint32_t t, size_t e,
             uint8_t& at0) {
    if (!built_ || bad != for_) rebuild(xs, bad, m, t, e);
    if (!usable_) return false;
    for (size_t c = 0; c < targets_.size(); ++c) {
      uint8_t v = 0;
      for (uint32_t a = 0; a < t; ++a) v ^= F().mul(w_[c * t + a], y[basis_[a]]);
      if (targets_[c] == kZero) at0 = v;
      else if (v != y[targets_[c]]) return false;
    }
    return true;
  }

 private:
  static constexpr size_t kZero = ~size_t{0};
  void rebuild(const uint8_t* xs, const std::vector<uint8_t>& bad, size_t m, uint32_t t, size_t e) {
    built_ = true;
    for_ = bad;
    basis_.clear();
    targets_.assign(1, kZero);
    for (size_t i = 0; i < m; ++i) {
      if (bad[i]) continue;
      if (basis_.size() < t) basis_.push_back(i);
      else targets_.push_back(i);
    }
    usable_ = basis_.size() + targets_.size() - 1 >= m - e && basis_.size() == t;
    w_.assign(targets_.size() * t, 0);
    for (size_t c = 0; usable_ && c < targets_.size(); ++c) {
      const uint8_t at = targets_[c] == kZero ? 0 : xs[targets_[c]];
      for (uint32_t a = 0; a < t; ++a) {  // L_a(at) = prod_{b != a} (at - x_b) / (x_a - x_b)
        uint8_t num = 1, den = 1;
        for (uint32_t b = 0; b < t; ++b) {
          if (b == a) continue;
          num = F().mul(num, static_cast<uint8_t>(at ^ xs[basis_[b]]));
          den = F().mul(den, static_cast<uint8_t>(xs[basis_[a]] ^ xs[basis_[b]]));
        }
        w_[c * t + a] = F().mul(num, F().inv(den));
      }
    }
  }
  bool built_ = false;
  std::vector<uint8_t> for_;  // the `bad` set the weights are for
  std::vector<size_t> basis_, targets_;
  std::vector<uint8_t> w_;
  bool usable_ = false;
};

}  // namespace

Status ShamirDecode(const uint8_t* xs, const uint8_t* ys, size_t m, size_t len, uint32_t t, uint8_t* secret,
                    std::vector<size_t>& off) {
  off.clear();
  FEDRT_TRY(ShamirCheckShares(xs, m, len, t));
  const size_t e = (m - t) / 2;
  std::vector<uint8_t> bad(m, 0), y(m), p;
  Agreement fast;
  for (size_t j = 0; j < len; ++j) {
    for (size_t i = 0; i < m; ++i) y[i] = ys[i * len + j];
    // Shares already found wrong are skipped; if the other m - e or more agree
    // on one polynomial it is the decoding (two such polynomials would share
    // m - 2e >= t points), else Berlekamp-Welch over all m.
    if (fast.agree(xs, y.data(), bad, m, t, e, secret[j])) continue;
    if (!DecodeByte(xs, y.data(), m, t, e, p))
      return Status(StatusCode::kDataLoss,
                    fmt::format("shamir: more than {} of the {} shares are wrong (threshold {}): cannot decode", e, m, t));
    secret[j] = p[0];
    for (size_t i = 0; i < m; ++i)
      if (Eval(p, t, xs[i]) != y[i]) bad[i] = 1;
  }
  for (size_t i = 0; i < m; ++i)
    if (bad[i]) off.push_back(i);
  return Status::Ok();
}

}  // namespace fedrt::secagg
