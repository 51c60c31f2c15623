#include "kernels/nn/rnn.h"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/core/row_io.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {

namespace {

// Rows per parallel chunk: about 16k elements of work each.
int64_t row_grain(int64_t row_elements) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, row_elements));
}

void check_2d(const TensorView& view, int64_t rows, int64_t cols, const char* what) {
  if (view.ndim != 2 || view.sizes[0] != rows || view.sizes[1] != cols) {
    throw std::invalid_argument(std::string("openneuron kernels: rnn cell: ") + what +
                                " must be [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "]");
  }
}

void check_bias(const TensorView* bias, int64_t cols, const char* what) {
  if (bias != nullptr && (bias->ndim != 1 || bias->sizes[0] != cols)) {
    throw std::invalid_argument(std::string("openneuron kernels: rnn cell: ") + what +
                                " must be [" + std::to_string(cols) + "]");
  }
}

// Reads and writes row r of a 2-D view (or the whole of a 1-D bias) in compute precision.
template <typename Compute>
void load(Compute* dst, const TensorView& view, int64_t row) {
  const int64_t size = element_size(view.dtype);
  const char* base = static_cast<const char*>(view.data);
  if (view.ndim == 1) {
    load_row(dst, base, view.strides[0] * size, view.dtype, view.sizes[0]);
  } else {
    load_row(dst, base + row * view.strides[0] * size, view.strides[1] * size, view.dtype,
             view.sizes[1]);
  }
}

template <typename Compute>
void store(const TensorView& view, int64_t row, const Compute* src) {
  const int64_t size = element_size(view.dtype);
  char* base = static_cast<char*>(view.data) + row * view.strides[0] * size;
  store_row(base, view.strides[1] * size, view.dtype, src, view.sizes[1]);
}

template <typename T>
inline T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// The per-dtype compute type: double for float64, fp32 otherwise.
template <typename Fn>
void with_compute_type(DType dtype, Fn&& fn) {
  if (!is_floating(dtype)) {
    throw std::invalid_argument(std::string("openneuron kernels: rnn cell needs a floating "
                                            "dtype, got ") +
                                dtype_name(dtype));
  }
  if (dtype == DType::Float64) {
    fn(double{});
  } else {
    fn(float{});
  }
}

// Per-chunk scratch rows: `count` buffers of `length` compute values.
template <typename Compute>
struct RowBuffers {
  std::vector<Compute> storage;
  int64_t length;
  RowBuffers(int count, int64_t length_) : storage(count * length_), length(length_) {}
  Compute* operator[](int i) { return storage.data() + i * length; }
};

}  // namespace

void lstm_cell_forward(const TensorView& hy, const TensorView& cy, const TensorView& workspace,
                       const TensorView& input_gates, const TensorView& hidden_gates,
                       const TensorView& cx, const TensorView* input_bias,
                       const TensorView* hidden_bias) {
  const int64_t batch = input_gates.sizes[0];
  const int64_t gates = input_gates.ndim == 2 ? input_gates.sizes[1] : 0;
  const int64_t hidden = gates / 4;
  check_2d(input_gates, batch, 4 * hidden, "input_gates");
  check_2d(hidden_gates, batch, gates, "hidden_gates");
  check_2d(workspace, batch, gates, "workspace");
  check_2d(cx, batch, hidden, "cx");
  check_2d(hy, batch, hidden, "hy");
  check_2d(cy, batch, hidden, "cy");
  check_bias(input_bias, gates, "input_bias");
  check_bias(hidden_bias, gates, "hidden_bias");
  if ((input_bias == nullptr) != (hidden_bias == nullptr)) {
    throw std::invalid_argument("openneuron kernels: lstm cell: give both biases or none");
  }
  if (batch == 0 || hidden == 0) return;
  with_compute_type(input_gates.dtype, [&](auto tag) {
    using Compute = decltype(tag);
    // The summed bias is added to the input gates first, as x W_ih^T + b_ih + ... on the CPU.
    std::vector<Compute> bias_i, bias_h;
    if (input_bias != nullptr) {
      bias_i.resize(gates);
      bias_h.resize(gates);
      load(bias_i.data(), *input_bias, 0);
      load(bias_h.data(), *hidden_bias, 0);
    }
    const bool has_bias = input_bias != nullptr;
    parallel_for(0, batch, row_grain(gates), [&](int64_t begin, int64_t end) {
      RowBuffers<Compute> rows(3, gates);
      Compute* in = rows[0];
      Compute* hid = rows[1];
      Compute* act = rows[2];
      std::vector<Compute> state(3 * hidden);
      Compute* c_prev = state.data();
      Compute* c_next = c_prev + hidden;
      Compute* h_next = c_next + hidden;
      for (int64_t r = begin; r < end; ++r) {
        load(in, input_gates, r);
        load(hid, hidden_gates, r);
        load(c_prev, cx, r);
        if (has_bias) {
          for (int64_t j = 0; j < gates; ++j) in[j] = (in[j] + bias_i[j]) + (hid[j] + bias_h[j]);
        } else {
          for (int64_t j = 0; j < gates; ++j) in[j] += hid[j];
        }
        for (int64_t j = 0; j < hidden; ++j) {
          const Compute i = sigmoid(in[j]);
          const Compute f = sigmoid(in[hidden + j]);
          const Compute g = std::tanh(in[2 * hidden + j]);
          const Compute o = sigmoid(in[3 * hidden + j]);
          act[j] = i;
          act[hidden + j] = f;
          act[2 * hidden + j] = g;
          act[3 * hidden + j] = o;
          const Compute c = f * c_prev[j] + i * g;
          c_next[j] = c;
          h_next[j] = o * std::tanh(c);
        }
        store(workspace, r, act);
        store(cy, r, c_next);
        store(hy, r, h_next);
      }
    });
  });
}

void lstm_cell_backward(const TensorView& grad_gates, const TensorView& grad_cx,
                        const TensorView* grad_hy, const TensorView* grad_cy, const TensorView& cx,
                        const TensorView& cy, const TensorView& workspace) {
  const int64_t batch = workspace.sizes[0];
  const int64_t gates = workspace.ndim == 2 ? workspace.sizes[1] : 0;
  const int64_t hidden = gates / 4;
  check_2d(workspace, batch, 4 * hidden, "workspace");
  check_2d(grad_gates, batch, gates, "grad_gates");
  check_2d(grad_cx, batch, hidden, "grad_cx");
  check_2d(cx, batch, hidden, "cx");
  check_2d(cy, batch, hidden, "cy");
  if (grad_hy != nullptr) check_2d(*grad_hy, batch, hidden, "grad_hy");
  if (grad_cy != nullptr) check_2d(*grad_cy, batch, hidden, "grad_cy");
  if (batch == 0 || hidden == 0) return;
  with_compute_type(grad_gates.dtype, [&](auto tag) {
    using Compute = decltype(tag);
    parallel_for(0, batch, row_grain(gates), [&](int64_t begin, int64_t end) {
      RowBuffers<Compute> rows(2, gates);
      Compute* act = rows[0];
      Compute* grad = rows[1];
      RowBuffers<Compute> state(5, hidden);
      Compute* gh = state[0];
      Compute* gc = state[1];
      Compute* c_prev = state[2];
      Compute* c_next = state[3];
      Compute* g_prev = state[4];
      for (int64_t r = begin; r < end; ++r) {
        load(act, workspace, r);
        load(c_prev, cx, r);
        load(c_next, cy, r);
        if (grad_hy != nullptr) {
          load(gh, *grad_hy, r);
        } else {
          std::fill(gh, gh + hidden, Compute(0));
        }
        if (grad_cy != nullptr) {
          load(gc, *grad_cy, r);
        } else {
          std::fill(gc, gc + hidden, Compute(0));
        }
        for (int64_t j = 0; j < hidden; ++j) {
          const Compute i = act[j], f = act[hidden + j], g = act[2 * hidden + j],
                        o = act[3 * hidden + j];
          const Compute tanh_c = std::tanh(c_next[j]);
          // Gradient reaching cy: through hy = o * tanh(cy), plus the direct grad_cy.
          const Compute dc = gh[j] * o * (Compute(1) - tanh_c * tanh_c) + gc[j];
          grad[j] = dc * g * (Compute(1) - i) * i;
          grad[hidden + j] = dc * c_prev[j] * (Compute(1) - f) * f;
          grad[2 * hidden + j] = dc * i * (Compute(1) - g * g);
          grad[3 * hidden + j] = gh[j] * tanh_c * (Compute(1) - o) * o;
          g_prev[j] = dc * f;
        }
        store(grad_gates, r, grad);
        store(grad_cx, r, g_prev);
      }
    });
  });
}

void gru_cell_forward(const TensorView& hy, const TensorView& workspace,
                      const TensorView& input_gates, const TensorView& hidden_gates,
                      const TensorView& hx, const TensorView* input_bias,
                      const TensorView* hidden_bias) {
  const int64_t batch = input_gates.sizes[0];
  const int64_t gates = input_gates.ndim == 2 ? input_gates.sizes[1] : 0;
  const int64_t hidden = gates / 3;
  check_2d(input_gates, batch, 3 * hidden, "input_gates");
  check_2d(hidden_gates, batch, gates, "hidden_gates");
  check_2d(workspace, batch, 5 * hidden, "workspace");
  check_2d(hx, batch, hidden, "hx");
  check_2d(hy, batch, hidden, "hy");
  check_bias(input_bias, gates, "input_bias");
  check_bias(hidden_bias, gates, "hidden_bias");
  if ((input_bias == nullptr) != (hidden_bias == nullptr)) {
    throw std::invalid_argument("openneuron kernels: gru cell: give both biases or none");
  }
  if (batch == 0 || hidden == 0) return;
  with_compute_type(input_gates.dtype, [&](auto tag) {
    using Compute = decltype(tag);
    std::vector<Compute> bias_i(gates, Compute(0)), bias_h(gates, Compute(0));
    if (input_bias != nullptr) {
      load(bias_i.data(), *input_bias, 0);
      load(bias_h.data(), *hidden_bias, 0);
    }
    const bool has_bias = input_bias != nullptr;
    parallel_for(0, batch, row_grain(gates), [&](int64_t begin, int64_t end) {
      RowBuffers<Compute> rows(2, gates);
      Compute* in = rows[0];
      Compute* hid = rows[1];
      std::vector<Compute> saved(5 * hidden);
      std::vector<Compute> out(hidden);
      for (int64_t r = begin; r < end; ++r) {
        load(in, input_gates, r);
        load(hid, hidden_gates, r);
        Compute* h_prev = saved.data() + 4 * hidden;
        load(h_prev, hx, r);
        if (has_bias) {
          for (int64_t j = 0; j < gates; ++j) {
            in[j] += bias_i[j];
            hid[j] += bias_h[j];
          }
        }
        for (int64_t j = 0; j < hidden; ++j) {
          const Compute reset = sigmoid(in[j] + hid[j]);
          const Compute update = sigmoid(in[hidden + j] + hid[hidden + j]);
          const Compute hn = hid[2 * hidden + j];
          const Compute candidate = std::tanh(in[2 * hidden + j] + reset * hn);
          saved[j] = reset;
          saved[hidden + j] = update;
          saved[2 * hidden + j] = candidate;
          saved[3 * hidden + j] = hn;
          out[j] = candidate + update * (h_prev[j] - candidate);
        }
        store(workspace, r, saved.data());
        store(hy, r, out.data());
      }
    });
  });
}

void gru_cell_backward(const TensorView& grad_input_gates, const TensorView& grad_hidden_gates,
                       const TensorView& grad_hx, const TensorView& grad_hy,
                       const TensorView& workspace) {
  const int64_t batch = workspace.sizes[0];
  const int64_t hidden = workspace.ndim == 2 ? workspace.sizes[1] / 5 : 0;
  const int64_t gates = 3 * hidden;
  check_2d(workspace, batch, 5 * hidden, "workspace");
  check_2d(grad_input_gates, batch, gates, "grad_input_gates");
  check_2d(grad_hidden_gates, batch, gates, "grad_hidden_gates");
  check_2d(grad_hx, batch, hidden, "grad_hx");
  check_2d(grad_hy, batch, hidden, "grad_hy");
  if (batch == 0 || hidden == 0) return;
  with_compute_type(grad_input_gates.dtype, [&](auto tag) {
    using Compute = decltype(tag);
    parallel_for(0, batch, row_grain(5 * hidden), [&](int64_t begin, int64_t end) {
      std::vector<Compute> saved(5 * hidden), gh(hidden), grad_h(hidden);
      RowBuffers<Compute> rows(2, gates);
      Compute* grad_in = rows[0];
      Compute* grad_hid = rows[1];
      for (int64_t r = begin; r < end; ++r) {
        load(saved.data(), workspace, r);
        load(gh.data(), grad_hy, r);
        for (int64_t j = 0; j < hidden; ++j) {
          const Compute reset = saved[j], update = saved[hidden + j],
                        candidate = saved[2 * hidden + j], hn = saved[3 * hidden + j],
                        h_prev = saved[4 * hidden + j];
          const Compute go = gh[j];
          const Compute d_update = go * (h_prev - candidate) * (Compute(1) - update) * update;
          const Compute d_candidate =
              go * (Compute(1) - update) * (Compute(1) - candidate * candidate);
          const Compute d_reset = d_candidate * hn * (Compute(1) - reset) * reset;
          grad_in[j] = d_reset;
          grad_in[hidden + j] = d_update;
          grad_in[2 * hidden + j] = d_candidate;
          grad_hid[j] = d_reset;
          grad_hid[hidden + j] = d_update;
          grad_hid[2 * hidden + j] = d_candidate * reset;
          grad_h[j] = go * update;
        }
        store(grad_input_gates, r, grad_in);
        store(grad_hidden_gates, r, grad_hid);
        store(grad_hx, r, grad_h.data());
      }
    });
  });
}

}  // namespace openneuron::kernels
