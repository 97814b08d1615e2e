#pragma once
// Robust reconstruction of a Shamir secret (shamir.h) when some shares are
// wrong: the shares of one secret are a Reed-Solomon codeword, so with m
// shares and threshold t up to e = floor((m - t) / 2) wrong ones can be
// located and dropped (docs/secure-aggregation.md "Cheating participants").
// Host code: the server calls it when ShamirCombine reports inconsistent shares.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fedrt/core/status.h"

namespace fedrt::secagg {

// For each byte j finds the polynomial p_j of degree < t that passes through
// all but at most e = floor((m - t) / 2) of the points (xs[i], ys[i len + j])
// (Berlekamp-Welch: E(x_i) y_ij = Q(x_i) for all i, E monic of degree e,
// deg Q < e + t, p_j = Q / E), writes secret[j] = p_j(0), and lists in `off`
// (ascending) the shares i that lie off p_j for some byte j. DATA_LOSS when a
// byte has no such polynomial (more than e wrong shares).
Status ShamirDecode(const uint8_t* xs, const uint8_t* ys, size_t m, size_t len, uint32_t t, uint8_t* secret,
                    std::vector<size_t>& off);

}  // namespace fedrt::secagg
