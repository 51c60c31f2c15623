// The entry points attention.h declares, without namespace or include guard: attention.h
// includes it inside namespace openneuron::kernels, and isa_kernels.h inside each ISA's
// namespace, so one list declares the public functions and every per-ISA copy of them.
// Includes nothing: AttentionParams and TensorView come from the enclosing namespace.

// Counter positions the dropout of a [batch, heads, L, S] attention consumes.
uint64_t attention_dropout_offset_increment(int64_t batch, int64_t heads, int64_t q_len,
                                            int64_t kv_len);

// out[B,H,L,Ev] = softmax(scale * q k^T + mask) v, with lse[B,H,L] (fp32) = logsumexp of the
// masked, scaled scores per query row (-inf for a row with every key masked; its output is 0).
// q [B,H,L,E]; k [B,Hk,S,E]; v [B,Hk,S,Ev] with H a multiple of Hk (grouped-query: head h
// reads key/value head h / (H/Hk)). mask is nullptr or a [B,H,L,S] view (stride 0 to
// broadcast) of bool (false = masked out) or of the inputs' float dtype (added to scores).
// q, k, v, out share one dtype among float32/bfloat16/float16; any strides.
void attention_forward(const TensorView& out, const TensorView& lse, const TensorView& q,
                       const TensorView& k, const TensorView& v, const TensorView* mask,
                       const AttentionParams& params);

// Gradients of attention_forward given grad_out and the forward's out and lse. Any gradient
// pointer may be nullptr. grad_mask, when given, is [B,H,L,S] dense-or-strided (the gradient
// of the additive float mask, before any broadcast reduction).
void attention_backward(const TensorView* grad_q, const TensorView* grad_k,
                        const TensorView* grad_v, const TensorView* grad_mask,
                        const TensorView& grad_out, const TensorView& q, const TensorView& k,
                        const TensorView& v, const TensorView& out, const TensorView& lse,
                        const TensorView* mask, const AttentionParams& params);
