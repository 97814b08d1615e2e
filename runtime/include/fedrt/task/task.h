#pragma once
// The task: everything a device needs to take part in an experiment, as plain
// data (docs/architecture.md, "The task travels"). The coordinator builds it
// from the experiment file and sends it at registration; the simulator builds
// the same struct. Device code: fixed sizes, no strings, no heap.
//
// A device regenerates its local data from (problem, its agent index) until
// devices hold their own data: the generator settings travel with the task.

#include <cstdint>

#include "fedrt/compression/quantizer.h"
#include "fedrt/task/limits.h"

namespace fedrt::task {

// The problem families; each has one pair of client/server cores per algorithm.
enum class Family : uint8_t {
  kLsa = 0,  // federated LSA / TD(0): FedLSA, SCAFFLSA (docs/algorithms.md 2)
  kOpt = 1,  // federated optimisation: FedAvg, Scaffold, FedProx (+ Fed-RR)
  kEm = 2,   // federated EM: FedEM, naive FedEM, VR-FedEM
};

enum class ProblemKind : uint8_t {
  kGarnet = 0,    // generated Garnet MDPs, TD(0) with linear features
  kBundle = 1,    // a federated TD(0) problem from an array-bundle file
  kLeastSquares = 2,
  kLogistic = 3,  // L2-regularised binary logistic regression
  kGmm = 4,       // Gaussian mixture (EM)
  kSoftmax = 5,   // L2-regularised multinomial logistic regression (own data only)
  kUser = 6,      // a user-defined model (fedrt/user_model.h): each device brings its loss and gradient
};

enum class AlgorithmKind : uint8_t {
  kFedLsa = 0,
  kScaffLsa = 1,      // deterministic communication every H steps ("H2")
  kScaffLsaProb = 2,  // Bernoulli(p) communication per step ("H1")
  kFedAvg = 3,
  kScaffold = 4,
  kFedProx = 5,
  kFedProxExact = 6,  // the exact proximal point (least squares only)
  kFedEm = 7,
  kFedEmNaive = 8,
  kVrFedEm = 9,
};

// One algorithm of an experiment; rr wraps an optimisation algorithm in
// Federated Richardson-Romberg (two chains with steps gamma and 2 gamma).
struct AlgorithmChoice {
  AlgorithmKind kind = AlgorithmKind::kFedLsa;
  bool rr = false;
};

constexpr Family FamilyOf(AlgorithmKind a) {
  return a <= AlgorithmKind::kScaffLsaProb ? Family::kLsa : (a <= AlgorithmKind::kFedProxExact ? Family::kOpt : Family::kEm);
}
constexpr Family FamilyOf(ProblemKind p) {
  return p <= ProblemKind::kBundle ? Family::kLsa : (p == ProblemKind::kGmm ? Family::kEm : Family::kOpt);
}

enum class Heterogeneity : uint8_t { kLow = 0, kHigh = 1 };

// Garnet MDPs (docs/algorithms.md 1.3).
struct GarnetSpec {
  uint32_t states = 30;
  uint32_t actions = 2;
  uint32_t branching = 2;
  double gamma = 0.95;
  double epsilon = 0.02;
  Heterogeneity heterogeneity = Heterogeneity::kLow;
  bool noise_free = false;  // expected-operator oracle (returns Abar_c, bbar_c)
};

// Synthetic supervised data (docs/algorithms.md 1.4).
struct SyntheticSpec {
  uint32_t samples = 200;  // mean n_c
  double covariate_shift = 0.0;
  double concept_shift = 0.0;
  double quantity_skew = 0.0;
  double noise = 0.5;  // least-squares label noise
  double l2 = 0.01;    // logistic regression's lambda (a model parameter too)
};

// Gaussian mixture data (docs/algorithms.md 1.5).
struct GmmSpec {
  uint32_t components = 2;  // G
  uint32_t data_dim = 2;    // p
  uint32_t points = 500;    // m_c
  double own_weight = 0.9;
  double separation = 4.0;
};

struct ProblemSpec {
  ProblemKind kind = ProblemKind::kGarnet;
  uint32_t agents = 100;   // N
  uint32_t dim = 8;        // d of the model (Garnet features, data features); EM: G (1 + p)
  uint64_t seed = 1;       // problem seed
  // A problem read from files (array bundle, CSV) cannot be regenerated on a
  // device: data_fingerprint (FNV-1a of the data) identifies it instead.
  bool from_files = false;
  uint64_t data_fingerprint = 0;
  GarnetSpec garnet;
  SyntheticSpec synthetic;
  GmmSpec gmm;
  // Each device reads its own shard (docs/data.md): from_files is set too,
  // and data_fingerprint covers only what the coordinator read.
  bool own_data = false;
  uint8_t data_format = 0;                // data::ShardFormat: 0 csv, 1 records
  char label[kMaxLabelChars + 1] = "label";  // CSV label column
  // Softmax regression: K classes (labels 0..K-1) and whether z = (a, 1)
  // carries an intercept; dim = K (p + intercept) for p features. Least
  // squares and logistic regression on shards may carry one too: d = p + 1.
  uint32_t classes = 0;
  bool intercept = false;
};

// Hyper-parameters shared by the experiment's algorithms.
struct HyperSpec {
  double step = 0.01;          // eta (gamma of the Fed-RR talk)
  uint32_t local_steps = 1000; // H
  double comm_prob = 0.001;    // p of SCAFFLSA-H1 (default 1/H)
  uint32_t batch = 0;          // samples per stochastic gradient / statistic (0 = full)
  double prox_mu = 1.0;        // FedProx mu
  double server_step = 1.0;    // eta_g
  uint32_t burn_in = 0;        // Fed-RR: rounds before the Polyak-Ruppert averages
  double em_step = 1.0;        // FedEM gamma
  uint32_t inner_iters = 10;   // VR-FedEM k_in
};

struct CompressionSpec {
  compression::QuantizerSpec quantizer;  // kNone: raw float64 uplink
  bool control_variates = false;         // compressed differences Q(g_c - V_c) (DIANA)
  bool downlink = false;                 // compress the broadcast too (simulator only)
  bool enabled() const { return quantizer.kind != compression::QuantizerKind::kNone; }
};

struct SecAggSpec {
  bool enabled = false;      // SecAgg+ on the rounding quantizer's integers
  uint32_t neighbours = 0;   // k (0 = the default graph for each round's n)
  double dropout = 0.0;      // simulator only: devices that vanish after sharing keys
};

// DP-FedAvg (docs/privacy.md): each device clips its round update to L2
// norm `clip`; the server divides the sum by q N. Central: the server adds
// Gaussian noise of std noise_multiplier * clip to the sum. Distributed
// (SecAgg+): each device adds discrete Gaussian noise of integer variance
// device_variance on a grid gamma = sigma clip / sqrt(m s2), m =
// ceil(quorum n) (privacy/ddg_params.h). Off: every round as without privacy.
// 32 bytes: the Cortex-M3 image fedrt-fw-lsa stores a default Task in flash.
struct PrivacySpec {  // the flags and s2 first: they fill the padding after `enabled`
  bool enabled = false;
  bool distributed = false;         // the devices add the noise (needs secagg)
  bool has_test_seed = false;       // distributed: draws keyed by test_seed (NOT private)
  uint32_t device_variance = 0;     // s2, in 1..2^24
  double clip = 1.0;
  double noise_multiplier = 0.0;
  uint32_t quorum_ppm = 0;          // quorum in millionths (distributed: 1..10^6): m = ceil(quorum_ppm n / 10^6)
  uint32_t test_seed = 0;           // the low 32 bits of privacy.test_seed
};

struct Task {
  ProblemSpec problem;
  uint32_t num_algorithms = 0;
  AlgorithmChoice algorithms[kMaxAlgorithms];
  HyperSpec hyper;
  CompressionSpec compression;
  SecAggSpec secagg;
  PrivacySpec privacy;
  double participation = 1.0;  // q: each agent takes part in a round with probability q
  uint64_t seed = 1;           // seed of every random stream of the run
  uint32_t rounds = 100;       // T
  uint32_t runs = 1;           // R
};

}  // namespace fedrt::task
