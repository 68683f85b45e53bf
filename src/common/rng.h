// Seeded random streams. One 64-bit seed plus a list of stream ids (epoch, sample index, worker,
// rank, ...) names an independent, reproducible stream, so results never depend on thread
// scheduling or worker count. The generator is xoshiro256**; seeding goes through SplitMix64.
// Its state is four words, saved in checkpoints to resume bit-exactly.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace detrain {

class Rng {
 public:
  using State = std::array<uint64_t, 4>;

  // A stream derived from `seed` and any number of stream ids.
  explicit Rng(uint64_t seed, std::initializer_list<uint64_t> stream = {}) {
    uint64_t h = mix(seed ^ 0x6a09e667f3bcc909ULL);
    for (uint64_t id : stream) h = mix(h ^ mix(id + 0x9e3779b97f4a7c15ULL));
    uint64_t sm = h;
    for (auto& word : state_) word = splitmix(sm);
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n), unbiased (Lemire's method with rejection).
  uint64_t below(uint64_t n) {
    if (n <= 1) return 0;
    uint64_t threshold = (0 - n) % n;
    while (true) {
      uint64_t x = next_u64();
      unsigned __int128 m = static_cast<unsigned __int128>(x) * n;
      if (static_cast<uint64_t>(m) >= threshold) return static_cast<uint64_t>(m >> 64);
    }
  }
  // True with probability p.
  bool bernoulli(double p) { return uniform() < p; }
  // Standard normal (Box-Muller; one value per call keeps the stream stateless beyond `state_`).
  double normal() {
    double u1 = uniform();
    double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  const State& state() const { return state_; }
  void set_state(const State& s) { state_ = s; }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  static uint64_t mix(uint64_t x) { return splitmix(x); }

  State state_{};
};

}  // namespace detrain
