// The entry points of the per-ISA kernel sources (see isa_variant.h), declared in namespace
// OPENNEURON_ISA_NAMESPACE: once per ISA by isa_dispatch.cpp, and by each variant source for
// its own ISA (so definitions and declarations are checked against each other). No include
// guard: every inclusion declares the namespace OPENNEURON_ISA_NAMESPACE names at that point.
// The declaration lists are the public headers' own (the *_entry_points.h fragments), so a
// change of signature there reaches every ISA copy.

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "kernels/attention/attention.h"
#include "kernels/attention/attention_block_ops.h"
#include "kernels/core/tensor_view.h"
#include "kernels/nn/normalization_rows.h"
#if !defined(OPENNEURON_ISA_NAMESPACE)
#include "kernels/runtime/isa_variant.h"  // a variant source: its own ISA's namespace
#endif

namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE {

#include "kernels/attention/attention_entry_points.h"

namespace attention_blocks {
#include "kernels/attention/attention_block_entry_points.h"
}  // namespace attention_blocks

namespace normalization_rows {
#include "kernels/nn/normalization_rows_entry_points.h"
}  // namespace normalization_rows

}  // namespace openneuron::kernels::OPENNEURON_ISA_NAMESPACE
