#pragma once
// Theory of FedLSA's heterogeneity bias (SCAFFLSA paper eq. 22-28,
// docs/algorithms.md 6), computed from the expected operators. Host only.

#include <Eigen/Dense>

#include "fedrt/problems/lsa_system.h"

namespace fedrt::analysis {

// (G, S) = ((I - eta A)^H, sum_{l<H} (I - eta A)^l) by binary powering,
// O(log H) products of d x d matrices.
void PowerAndSeries(const problems::MatrixRM& a, double eta, long h, problems::MatrixRM& g, problems::MatrixRM& s);

struct FedLsaBias {
  Eigen::VectorXd rho;         // rho = mean_c (I - G_c)(theta_c - theta_star), G_c = (I - eta Abar_c)^H
  problems::MatrixRM g_bar;    // Gbar = mean_c G_c
  Eigen::VectorXd after_rounds;  // bias_T = sum_{s=1}^T Gbar^{T-s} rho
  Eigen::VectorXd stationary;    // bias_inf = (I - Gbar)^{-1} rho
};

// Predicted bias of FedLSA with step eta, H local steps, after T rounds, full
// participation. (I - G_c) theta_c is evaluated as eta sum_{l<H} (I - eta Abar_c)^l bbar_c,
// which equals (I - G_c) Abar_c^{-1} bbar_c and needs no inverse of Abar_c.
FedLsaBias PredictFedLsaBias(const problems::LsaSystem& lsa, double eta, long local_steps, long rounds);

// Delta_het = mean_c ||theta_star - theta_c|| (NaN if some Abar_c is singular).
double DeltaHet(const problems::LsaSystem& lsa);

}  // namespace fedrt::analysis
