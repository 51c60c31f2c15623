// One table of published constants per NeuronCore generation: memories, engine clocks and the
// instruction-cost constants. The simulator, the cost model and the profiler all read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace openneuron::sim {

struct CoreProfile {
  std::string name;  // "trn2", "trn3"
  // Memories.
  int partitions;                    // 128
  int64_t sbuf_bytes_per_partition;  // 224 KiB (trn2), 256 KiB (trn3)
  int64_t psum_bytes_per_partition;  // 16 KiB
  int64_t psum_bank_bytes;           // 2 KiB: 512 fp32 per partition
  // Tensor engine limits.
  int matmul_max_k;  // contraction (partitions)
  int matmul_max_m;  // stationary free size
  int matmul_max_n;  // moving free size
  // Clocks in GHz.
  double tensor_ghz;
  double vector_ghz;
  double scalar_ghz;
  double gpsimd_ghz;
  // Instruction costs in engine cycles.
  int64_t min_instruction_cycles;    // Vector/Scalar ops take at least this long (64)
  int64_t sbuf_access_cycles;        // fixed cost of a Vector/Scalar/GpSimd instruction (60)
  int64_t matmul_min_stationary;     // PE cost is max(min(this, M), N) cycles (64)
  int64_t fp32_matmul_factor;        // fp32 runs 4 passes through the array
  int64_t activation_reduce_cycles;  // extra cycles of activation with a reduce (64)
  int64_t iota_fixed_cycles;         // iota costs this + N (150)
  int64_t semaphore_wait_cycles;     // a wait on another engine's result (~100)
  // DMA.
  int dma_engines;                     // 16 per core
  double dma_bytes_per_ns_per_engine;  // 23 (trn2), 33 (trn3)
  double dma_fixed_ns;                 // ~1,300 ns latency from issue to first byte
  double dma_descriptor_ns;            // per contiguous chunk; makes < 256 B chunks overhead-bound
  int64_t indirect_index_cycles;       // reading run-time offsets from SBUF first (~140)
  double hbm_gb_per_s;                 // per core, for the eager cost model
  // Peaks per core, for the eager cost model (TFLOPS).
  double peak_bf16_tflops;
  double peak_fp32_tflops;
  double vector_fp32_tflops;
};

// Every profile the simulator knows, trn2 first.
const std::vector<CoreProfile>& core_profiles();
// The profile called `name`; throws std::invalid_argument naming the accepted names otherwise.
const CoreProfile& core_profile(const std::string& name);

}  // namespace openneuron::sim
