#include "aten/nested/padded_rows.h"

#include <ATen/NestedTensorImpl.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>

namespace openneuron::bridge::nested {

at::Tensor nested_from_padded_rows(const at::Tensor& padded, const std::vector<int64_t>& lengths) {
  TORCH_CHECK(padded.dim() == 3 && padded.size(0) == static_cast<int64_t>(lengths.size()),
              "expected a padded batch [", lengths.size(), ", T, E], got ", padded.sizes());
  const int64_t width = padded.size(2);
  std::vector<at::Tensor> rows;
  auto nested_sizes = at::empty({static_cast<int64_t>(lengths.size()), 2}, at::kLong);
  auto* sizes = nested_sizes.data_ptr<int64_t>();  // a host tensor
  for (size_t b = 0; b < lengths.size(); ++b) {
    rows.push_back(padded.select(0, static_cast<int64_t>(b)).narrow(0, 0, lengths[b]).reshape(-1));
    sizes[2 * b] = lengths[b];
    sizes[2 * b + 1] = width;
  }
  auto buffer = rows.empty() ? padded.new_empty({0}) : at::cat(rows);
  return at::detail::make_tensor<at::native::NestedTensorImpl>(std::move(buffer),
                                                               std::move(nested_sizes));
}

std::vector<int64_t> sequence_lengths(const at::Tensor& nested) {
  const auto& sizes = at::native::get_nested_tensor_impl(nested)->get_nested_sizes();
  TORCH_CHECK(sizes.dim() == 2 && sizes.size(1) == 2,
              "expected a nested tensor of 2-D components [length, features]");
  const auto* data = sizes.const_data_ptr<int64_t>();  // a host tensor
  std::vector<int64_t> lengths(static_cast<size_t>(sizes.size(0)));
  for (size_t b = 0; b < lengths.size(); ++b) {
    lengths[b] = data[2 * b];
  }
  return lengths;
}

at::Tensor padding_mask(const std::vector<int64_t>& lengths, int64_t padded_length,
                        c10::Device device) {
  auto ends = at::tensor(lengths, at::kLong).to(device).unsqueeze(1);
  return at::arange(padded_length, at::TensorOptions().dtype(at::kLong).device(device))
      .unsqueeze(0)
      .ge(ends);
}

}  // namespace openneuron::bridge::nested
