// Private helpers of the attention kernels: register-blocked fp32 products of small blocks
// and the row reductions of the online softmax. All of them work on L1/L2-sized blocks on the
// calling thread; the caller parallelises over blocks.
#pragma once

#include <cstdint>

namespace openneuron::kernels::attention_blocks {

#include "kernels/attention/attention_block_entry_points.h"  // contracts there

}  // namespace openneuron::kernels::attention_blocks
