// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a
// counter-based generator, so any element's random bits are computable independently.
#pragma once

#include <array>
#include <cstdint>

namespace openneuron::kernels {

using PhiloxBlock = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// The ten-round bijection of `counter` under `key`.
inline PhiloxBlock philox4x32_10(PhiloxBlock counter, PhiloxKey key) {
  constexpr uint32_t kMultiplier0 = 0xD2511F53u;
  constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
  constexpr uint32_t kKeyStep0 = 0x9E3779B9u;
  constexpr uint32_t kKeyStep1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kKeyStep0;
      key[1] += kKeyStep1;
    }
    const uint64_t product0 = static_cast<uint64_t>(kMultiplier0) * counter[0];
    const uint64_t product1 = static_cast<uint64_t>(kMultiplier1) * counter[2];
    const uint32_t hi0 = static_cast<uint32_t>(product0 >> 32);
    const uint32_t lo0 = static_cast<uint32_t>(product0);
    const uint32_t hi1 = static_cast<uint32_t>(product1 >> 32);
    const uint32_t lo1 = static_cast<uint32_t>(product1);
    counter = {hi1 ^ counter[1] ^ key[0], lo1, hi0 ^ counter[3] ^ key[1], lo0};
  }
  return counter;
}

// The block for 64-bit counter position `position` under a 64-bit seed.
inline PhiloxBlock philox_block(uint64_t seed, uint64_t position) {
  const PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  const PhiloxBlock counter = {static_cast<uint32_t>(position),
                               static_cast<uint32_t>(position >> 32), 0u, 0u};
  return philox4x32_10(counter, key);
}

}  // namespace openneuron::kernels
