#pragma once
// Settings of the compression layer (every family's uplink, optional
// downlink) and of the Gaussian-mixture / federated EM family: the
// [compression] and [gmm] tables of an experiment file (docs/algorithms.md 1.5, 4, 5).

#include <string>

#include "fedrt/compression/quantizer.h"
#include "fedrt/core/status.h"

namespace fedrt::config {

struct CompressionSettings {
  compression::QuantizerSpec quantizer;  // kind none = raw float64 payloads
  bool control_variates = false;         // compressed differences Q(g_c - V_c) (DIANA)
  bool downlink = false;                 // also compress the broadcast (differences to the agents' model)
  bool enabled() const { return quantizer.kind != compression::QuantizerKind::kNone; }
};

// Gaussian mixture (docs/algorithms.md 1.5) and FedEM hyper-parameters (section 5).
struct GmmSettings {
  int components = 2;          // G
  int data_dim = 2;            // p
  long points = 500;           // m_c, data points per agent
  double own_weight = 0.9;     // weight of agent c's own component (c mod G); 1/G = homogeneous
  double separation = 4.0;     // true means on a circle of this diameter (first two coordinates)
  double em_step = 1.0;        // gamma of FedEM / VR-FedEM
  long inner_iters = 10;       // k_in, VR-FedEM cycle length
  long batch = 0;              // b, mini-batch of local statistics (0 = full local pass)
};

Result<compression::QuantizerKind> ParseQuantizerKind(const std::string& s);
const char* QuantizerKindName(compression::QuantizerKind k);

}  // namespace fedrt::config
