// A fast 64-bit hash of bytes, for cache keys (is this the file the cache was made from?), not
// for security. Four independent multiply-rotate lanes over 32-byte blocks run at memory speed
// (a 286 MB annotation file hashes in a few tens of milliseconds); Hash64 takes the bytes in
// pieces of any size and gives the same value as one call over their concatenation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace detrain {

class Hash64 {
 public:
  explicit Hash64(uint64_t seed = 0) : lanes_{seed + kP1 + kP2, seed + kP2, seed, seed - kP1} {}

  void update(const void* data, size_t size) {
    auto* p = static_cast<const unsigned char*>(data);
    total_ += size;
    if (pending_ > 0) {  // complete the block begun by an earlier piece
      const size_t take = size < kBlock - pending_ ? size : kBlock - pending_;
      std::memcpy(block_ + pending_, p, take);
      pending_ += take;
      p += take;
      size -= take;
      if (pending_ < kBlock) return;
      consume(block_);
      pending_ = 0;
    }
    for (; size >= kBlock; p += kBlock, size -= kBlock) consume(p);
    std::memcpy(block_, p, size);
    pending_ = size;
  }

  uint64_t digest() const {
    uint64_t h =
        rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18);
    for (const uint64_t lane : lanes_) h = (h ^ round(0, lane)) * kP1 + kP4;
    h += total_;
    for (size_t i = 0; i < pending_; ++i) h = rotl(h ^ (block_[i] * kP5), 11) * kP1;
    return avalanche(h);
  }

 private:
  static constexpr size_t kBlock = 32;
  static constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL, kP2 = 0xC2B2AE3D27D4EB4FULL,
                            kP4 = 0x85EBCA77C2B2AE63ULL, kP5 = 0x27D4EB2F165667C5ULL;

  static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static uint64_t round(uint64_t lane, uint64_t word) { return rotl(lane + word * kP2, 31) * kP1; }
  static uint64_t avalanche(uint64_t h) {
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP5;
    return h ^ (h >> 32);
  }
  void consume(const unsigned char* p) {
    for (int i = 0; i < 4; ++i) {
      uint64_t word;
      std::memcpy(&word, p + 8 * i, 8);
      lanes_[i] = round(lanes_[i], word);
    }
  }

  uint64_t lanes_[4];
  unsigned char block_[kBlock] = {};
  size_t pending_ = 0;
  uint64_t total_ = 0;
};

inline uint64_t hash64(const void* data, size_t size, uint64_t seed = 0) {
  Hash64 h(seed);
  h.update(data, size);
  return h.digest();
}

}  // namespace detrain
