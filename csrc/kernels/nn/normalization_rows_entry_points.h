// The functions normalization_rows.h declares, without namespace or include guard: included
// inside namespace normalization_rows of openneuron::kernels and of each ISA's namespace
// (isa_kernels.h), so one list declares the public functions and every per-ISA copy.
// Includes nothing: TensorView and the std types come from the including header.

// Whether the fast path takes these [R, D] views (non-null ones; rows of any stride).
bool supports(std::initializer_list<const TensorView*> row_views);

// row_norm_forward's contract; w/b hold D values (1 / 0 when absent); mean/rstd get R
// statistics.
void forward(const TensorView& out, const TensorView& input, const std::vector<float>& w,
             const std::vector<float>& b, double eps, bool rms, std::vector<double>& mean,
             std::vector<double>& rstd);

// row_norm_backward's contract for grad_input (may be nullptr) and the column sums of
// grad_weight (g * xhat) and grad_bias (g), returned in gw/gb (sized D) when want_columns.
void backward(const TensorView* grad_input, const TensorView& grad_out, const TensorView& input,
              const std::vector<float>& w, const std::vector<float>& mean,
              const std::vector<float>& rstd, bool rms, bool want_columns, std::vector<double>& gw,
              std::vector<double>& gb);
