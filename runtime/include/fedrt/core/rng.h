#pragma once
// Counter-based random numbers keyed by (seed, run, agent, round, stream).
// x_i = mix64(key + (i + 1) * 0x9E3779B97F4A7C15) (SplitMix64's output function
// on a counter), so any draw can be recomputed from its key and step index,
// and results never depend on thread count or scheduling.

#include <cstdint>

namespace fedrt {

// Finaliser of SplitMix64 (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
constexpr uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// What a stream of random numbers is used for; part of every key.
enum class RngStream : uint64_t {
  kLocalSteps = 1,     // oracle samples Z_{t,h}^c of agent c in round t
  kParticipation = 2,  // whether agent c is sampled in round t
  kCommunication = 3,  // SCAFFLSA-H1: Bernoulli(p) communication draws of round t
  kProblem = 4,        // problem generation (Garnet instance)
  kCompression = 5,    // dithering / stochastic rounding draws
  kPrivacyTest = 6,    // DP-FedAvg's noise under privacy.test_seed (reproducible, not private)
  kDdgRotation = 7,    // distributed DP: the round's public rotation signs
  kDdgTestNoise = 8,   // distributed DP: a device's rounding and noise under privacy.test_seed (not private)
  kDevices = 9,        // the virtual clock: agent c's speed, bandwidth and diurnal window (sim/device_clock.h)
  kDispatch = 10,      // buffered asynchronous rounds: which online device takes a free slot
};

// Key of one stream: hashes every coordinate so nearby keys give unrelated streams.
constexpr uint64_t RngKey(uint64_t seed, uint64_t run, uint64_t agent, uint64_t round,
                          RngStream stream) {
  uint64_t k = Mix64(seed ^ 0x6A09E667F3BCC909ull);
  k = Mix64(k ^ (run + 0x3C6EF372FE94F82Bull));
  k = Mix64(k ^ (agent + 0xA54FF53A5F1D36F1ull));
  k = Mix64(k ^ (round + 0x510E527FADE682D1ull));
  k = Mix64(k ^ (static_cast<uint64_t>(stream) + 0x9B05688C2B3E6C1Full));
  return k;
}

class CounterRng {
 public:
  static constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

  constexpr explicit CounterRng(uint64_t key, uint64_t step = 0) : state_(key + step * kGolden) {}
  constexpr CounterRng(uint64_t seed, uint64_t run, uint64_t agent, uint64_t round, RngStream stream)
      : CounterRng(RngKey(seed, run, agent, round, stream)) {}

  // Next 64 uniformly distributed bits (the step counter advances by one).
  inline uint64_t next_u64() {
    state_ += kGolden;
    return Mix64(state_);
  }
  // Skips n draws and returns the state before them: draw i (1 <= i <= n) is Mix64(state + i * kGolden).
  inline uint64_t advance(uint64_t n) {
    const uint64_t s = state_;
    state_ += n * kGolden;
    return s;
  }
  // Uniform double in [0, 1) with 53 random bits.
  inline double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform float in [0, 1) with 24 random bits.
  inline float uniform_f() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }
  template <class S>
  inline S uniform_as() {
    if constexpr (sizeof(S) == sizeof(float)) return static_cast<S>(uniform_f());
    else return static_cast<S>(uniform());
  }
  // Bernoulli(p) draw.
  inline bool bernoulli(double p) { return uniform() < p; }
  // Uniform integer in [0, n) by multiply-shift (bias <= n / 2^32).
  inline uint32_t below(uint32_t n) {
    return static_cast<uint32_t>(((next_u64() >> 32) * static_cast<uint64_t>(n)) >> 32);
  }

 private:
  uint64_t state_;
};

}  // namespace fedrt
