#include "sim/profile.h"

#include <stdexcept>

namespace openneuron::sim {

namespace {

constexpr int64_t kKiB = 1024;

// Published trn2 (NeuronCore-v3) constants: the NKI architecture guide and ISA cost notes.
// dma_descriptor_ns is not published; it is the value for which 512 B and 2 KiB chunks give the
// matmul tutorial's DMA-bound latency, and it makes chunks under 256 B overhead-bound, 2 KiB
// near peak and 4 KiB saturating, as the DMA guide states.
CoreProfile make_trn2() {
  CoreProfile p;
  p.name = "trn2";
  p.partitions = 128;
  p.sbuf_bytes_per_partition = 224 * kKiB;
  p.psum_bytes_per_partition = 16 * kKiB;
  p.psum_bank_bytes = 2 * kKiB;
  p.matmul_max_k = 128;
  p.matmul_max_m = 128;
  p.matmul_max_n = 512;
  p.tensor_ghz = 2.4;
  p.vector_ghz = 0.96;
  p.scalar_ghz = 1.2;
  p.gpsimd_ghz = 1.2;
  p.min_instruction_cycles = 64;
  p.sbuf_access_cycles = 60;
  p.matmul_min_stationary = 64;
  p.fp32_matmul_factor = 4;
  p.activation_reduce_cycles = 64;
  p.iota_fixed_cycles = 150;
  p.semaphore_wait_cycles = 100;
  p.dma_engines = 16;
  p.dma_bytes_per_ns_per_engine = 23.0;
  p.dma_fixed_ns = 1300.0;
  p.dma_descriptor_ns = 17.0;
  // The ISA notes' cost of a dynamic offset: about 140 cycles to read the index values from
  // SBUF into the engine, before the transfer.
  p.indirect_index_cycles = 140;
  p.hbm_gb_per_s = 2900.0 / 8;
  p.peak_bf16_tflops = 79.0;
  p.peak_fp32_tflops = 19.75;
  p.vector_fp32_tflops = 1.0;
  return p;
}

// trn3 (NeuronCore-v4): larger SBUF, faster Vector clock and DMA; same PE array and PSUM.
CoreProfile make_trn3() {
  CoreProfile p = make_trn2();
  p.name = "trn3";
  p.sbuf_bytes_per_partition = 256 * kKiB;
  p.vector_ghz = 1.2;
  p.dma_bytes_per_ns_per_engine = 33.0;
  p.hbm_gb_per_s = 4900.0 / 8;
  p.vector_fp32_tflops = 1.2;
  return p;
}

}  // namespace

const std::vector<CoreProfile>& core_profiles() {
  static const std::vector<CoreProfile> profiles = {make_trn2(), make_trn3()};
  return profiles;
}

const CoreProfile& core_profile(const std::string& name) {
  for (const auto& profile : core_profiles()) {
    if (profile.name == name) return profile;
  }
  throw std::invalid_argument("unknown NeuronCore profile '" + name + "' (known: trn2, trn3)");
}

}  // namespace openneuron::sim
