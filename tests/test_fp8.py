"""float8 on neuron, natively: casts to and from float8_e4m3fn / float8_e5m2 bit for bit as the
CPU's .to(), torch._scaled_mm (tensor-wise and row-wise scales, fp32 accumulation) against a
float64 reference of the dequantised product and against the CPU's own _scaled_mm, CUDA's
checks at the call, and torch._scaled_grouped_mm's four layouts sharing the same kernel."""

import pytest
import torch
from kernel_mutants import kernel_replaced

import openneuron

FLOAT8 = [torch.float8_e4m3fn, torch.float8_e5m2]
WIDE = [torch.float32, torch.bfloat16, torch.float16]
MANTISSA_BITS = {torch.float32: 23, torch.bfloat16: 7, torch.float16: 10}
MIN_EXPONENT = {torch.float32: -126, torch.bfloat16: -126, torch.float16: -14}


def neuron(*tensors):
    return [t.to("neuron") for t in tensors]


# --- casts ------------------------------------------------------------------------------------


def every_16_bit_pattern(dtype):
    return torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)


@pytest.mark.parametrize("float8", FLOAT8, ids=str)
def test_casts_to_float8_equal_the_cpu_bit_for_bit_natively(float8):
    torch.manual_seed(0)
    fp32 = torch.cat(
        [
            torch.randint(-(2**31), 2**31 - 1, (1 << 18,), dtype=torch.int32).view(torch.float32),
            torch.tensor([448.0, 464.0, 480.0, 57344.0, 61440.0, 1e30, float("inf"), -0.0]),
            torch.tensor([float("-inf"), float("nan"), 2.0**-10, 2.0**-17, 2.0**-9 * 1.5]),
        ]
    )
    sources = [every_16_bit_pattern(torch.bfloat16), every_16_bit_pattern(torch.float16), fp32]
    openneuron.clear_op_tracking()
    for source in sources:
        on_device = source.to("neuron").to(float8).cpu()
        assert torch.equal(on_device.view(torch.uint8), source.to(float8).view(torch.uint8))
    assert openneuron.get_fallback_ops() == {}


@pytest.mark.parametrize("wide", WIDE, ids=str)
@pytest.mark.parametrize("float8", FLOAT8, ids=str)
def test_every_float8_value_widens_as_on_the_cpu_natively(float8, wide):
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(float8)
    openneuron.clear_op_tracking()
    widened = codes.to("neuron").to(wide).cpu()
    assert openneuron.get_fallback_ops() == {}
    expected = codes.to(wide)
    assert torch.equal(widened.isnan(), expected.isnan())
    assert torch.equal(widened[~expected.isnan()], expected[~expected.isnan()])


# --- _scaled_mm -------------------------------------------------------------------------------


def ulp(x, dtype):
    """The spacing of dtype's values at |x| (elementwise, float64)."""
    exponent = torch.floor(torch.log2(x.abs().clamp_min(1e-300))).clamp_min(MIN_EXPONENT[dtype])
    return torch.exp2(exponent - MANTISSA_BITS[dtype])


def float64_reference(a, b, scale_a, scale_b, bias=None):
    """The dequantised product in float64 and the largest distance an fp32-accumulated, once
    rounded result may have from it: half an ulp of the output, plus K + 3 fp32 roundings
    (partial sums and the scale products) of what they round."""
    a64, b64 = a.double(), b.double()
    scale = scale_a.double().reshape(-1, 1) * scale_b.double().reshape(1, -1)
    value = (a64 @ b64) * scale
    magnitude = (a64.abs() @ b64.abs()) * scale.abs()
    if bias is not None:
        value = value + bias.double()
        magnitude = magnitude + bias.double().abs()
    return value, (a.shape[1] + 3) * 2.0**-24 * magnitude


def assert_within_rounding(out, a, b, scale_a, scale_b, bias=None):
    value, fp32_error = float64_reference(a, b, scale_a, scale_b, bias)
    rounding = 0 if out.dtype == torch.float32 else 0.5 * ulp(value, out.dtype) * (1 + 1e-6)
    error = (out.double() - value).abs()
    worst = (error / (rounding + fp32_error)).max().item()
    assert worst <= 1.0, f"{worst:.2f} times the rounding bound"


def float8_operands(m, k, n, a_dtype=torch.float8_e4m3fn, b_dtype=torch.float8_e4m3fn, seed=0):
    """a [m, k] row-major and b [k, n] column-major (the layout CUDA's GEMM takes)."""
    generator = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=generator) * 4).to(a_dtype)
    b = (torch.randn(n, k, generator=generator) * 4).to(b_dtype).t()
    return a, b


def scales_for(kind, m, n, seed=1):
    generator = torch.Generator().manual_seed(seed)
    if kind == "tensorwise":
        return torch.tensor(0.0371), torch.tensor(0.52)
    return (
        torch.rand(m, 1, generator=generator) * 0.5 + 0.01,
        torch.rand(1, n, generator=generator) * 0.5 + 0.01,
    )


@pytest.mark.parametrize("out_dtype", WIDE, ids=str)
@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
def test_scaled_mm_stays_within_one_rounding_of_float64_natively(scaling, out_dtype):
    a, b = float8_operands(40, 96, 48)
    scale_a, scale_b = scales_for(scaling, 40, 48)
    openneuron.clear_op_tracking()
    out = torch._scaled_mm(*neuron(a, b, scale_a, scale_b), out_dtype=out_dtype)
    assert openneuron.get_fallback_ops() == {}
    assert out.dtype == out_dtype and out.shape == (40, 48)
    assert_within_rounding(out.cpu(), a, b, scale_a, scale_b)


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16], ids=str)
def test_scaled_mm_adds_the_bias_with_mixed_float8_formats_natively(out_dtype):
    a, b = float8_operands(24, 64, 32, torch.float8_e5m2, torch.float8_e4m3fn)
    scale_a, scale_b = scales_for("rowwise", 24, 32)
    bias = torch.randn(32).to(out_dtype)
    openneuron.clear_op_tracking()
    out = torch._scaled_mm(
        *neuron(a, b, scale_a, scale_b), bias=bias.to("neuron"), out_dtype=out_dtype
    )
    assert openneuron.get_fallback_ops() == {}
    assert_within_rounding(out.cpu(), a, b, scale_a, scale_b, bias)


# Measured against torch CPU's _scaled_mm (which scales the operands before an fp32 matmul and
# adds the bias after it): bf16 at most 1 ulp apart, fp16 2 ulps, fp32 9e-5 relative where the
# sum cancels (3e-7 absolute).
CPU_TOLERANCE = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.bfloat16: dict(rtol=2**-7, atol=1e-3),
    torch.float16: dict(rtol=2**-10, atol=1e-3),
}


@pytest.mark.parametrize("out_dtype", WIDE, ids=str)
@pytest.mark.parametrize("scaling", ["tensorwise", "rowwise"])
def test_scaled_mm_matches_the_cpus_scaled_mm(scaling, out_dtype):
    a, b = float8_operands(32, 128, 64, seed=3)
    scale_a, scale_b = scales_for(scaling, 32, 64, seed=4)
    bias = torch.randn(64).to(out_dtype) if out_dtype != torch.float32 else None
    expected = torch._scaled_mm(a, b, scale_a, scale_b, bias=bias, out_dtype=out_dtype)
    device_bias = None if bias is None else bias.to("neuron")
    out = torch._scaled_mm(*neuron(a, b, scale_a, scale_b), bias=device_bias, out_dtype=out_dtype)
    torch.testing.assert_close(out.cpu(), expected, **CPU_TOLERANCE[out_dtype])


def test_scaled_mm_is_exact_when_every_step_is():
    # Small integers, power-of-two scales, a short K: any extra rounding or reordering shows.
    a = (torch.arange(32 * 16).reshape(32, 16) % 7 - 3).float().to(torch.float8_e4m3fn)
    b = (torch.arange(16 * 16).reshape(16, 16) % 5 - 2).float().to(torch.float8_e4m3fn).t()
    scale_a = torch.exp2(torch.arange(32).float().reshape(32, 1) % 4 - 2)
    scale_b = torch.exp2(-(torch.arange(16).float().reshape(1, 16) % 3))
    out = torch._scaled_mm(*neuron(a, b, scale_a, scale_b), out_dtype=torch.float32)
    expected = (a.double() @ b.double()) * scale_a.double() * scale_b.double()
    assert torch.equal(out.cpu().double(), expected)


def test_scaled_mm_to_float8_multiplies_by_the_result_scale_and_saturates():
    # CUDA's scale_result multiplies the result before the float8 rounding (cuBLAS's D scale).
    a, b = float8_operands(16, 32, 16)
    scale_a, scale_b = torch.tensor(0.125), torch.tensor(0.25)
    for result_scale in (0.5, 1e6):
        out = torch._scaled_mm(
            *neuron(a, b, scale_a, scale_b),
            scale_result=torch.tensor(result_scale).to("neuron"),
            out_dtype=torch.float8_e4m3fn,
        )
        value = (a.double() @ b.double()) * 0.125 * 0.25 * result_scale
        assert torch.equal(
            out.cpu().view(torch.uint8), value.float().to(torch.float8_e4m3fn).view(torch.uint8)
        )


def test_scaled_mm_out_writes_the_given_tensor():
    a, b = float8_operands(16, 32, 16)
    scale_a, scale_b = scales_for("rowwise", 16, 16)
    out = torch.empty(3, device="neuron", dtype=torch.bfloat16)
    result = torch._scaled_mm(*neuron(a, b, scale_a, scale_b), out_dtype=torch.bfloat16, out=out)
    assert result is out and out.shape == (16, 16)
    assert_within_rounding(out.cpu(), a, b, scale_a, scale_b)


def test_scaled_mm_with_zero_depth_gives_zeros_as_cuda_does():
    a = torch.empty(16, 0, dtype=torch.float8_e4m3fn)
    b = torch.empty(16, 0, dtype=torch.float8_e4m3fn).t()
    one = torch.tensor(1.0)
    out = torch._scaled_mm(*neuron(a, b, one, one), out_dtype=torch.bfloat16)
    assert torch.equal(out.cpu(), torch.zeros(16, 16, dtype=torch.bfloat16))


def test_a_wrong_scale_is_caught():
    """The comparison above fails for a kernel that is right but for its column scales, shifted
    by one column (every value stays plausible), and passes once the real kernel is back."""

    def shifted_column_scales(
        a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False
    ):
        wrong_b = torch.roll(scale_b.cpu(), 1, dims=-1)
        product = (a.cpu().float() @ b.cpu().float()) * scale_a.cpu() * wrong_b
        return product.to(out_dtype).to(a.device)

    with kernel_replaced("_scaled_mm", shifted_column_scales), pytest.raises(AssertionError):
        test_scaled_mm_stays_within_one_rounding_of_float64_natively("rowwise", torch.bfloat16)
    test_scaled_mm_stays_within_one_rounding_of_float64_natively("rowwise", torch.bfloat16)


# --- CUDA's checks ----------------------------------------------------------------------------


def call(a, b, scale_a, scale_b, **kwargs):
    return torch._scaled_mm(*neuron(a, b, scale_a, scale_b), **kwargs)


def test_scaled_mm_refuses_what_cuda_refuses_at_the_call():
    a, b = float8_operands(16, 32, 16)
    one = torch.tensor(1.0)
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        call(a, b[:16], one, one)
    with pytest.raises(ValueError, match="Invalid scaling configuration"):
        call(a.bfloat16(), b, one, one)
    with pytest.raises(ValueError, match="Invalid scaling configuration"):
        call(a, b, torch.ones(16), torch.ones(16))  # row-wise scales must be 2-D
    with pytest.raises(ValueError, match="Invalid scaling configuration"):
        call(a, b, one.double(), one)
    with pytest.raises(RuntimeError, match="divisible by 16"):
        a8, b8 = float8_operands(16, 24, 16)
        call(a8, b8, one, one)
    with pytest.raises(RuntimeError, match="mat2 must be col_major"):
        call(a, b.contiguous(), one, one)
    with pytest.raises(RuntimeError, match="self must be row_major"):
        call(a.t().contiguous().t(), b, one, one)
    with pytest.raises(ValueError, match="two Float8_e5m2 matrices"):
        call(a.to(torch.float8_e5m2), b.to(torch.float8_e5m2), one, one)
    with pytest.raises(
        RuntimeError, match="Bias is not supported when out_dtype is set to Float32"
    ):
        call(a, b, one, one, bias=torch.zeros(16, device="neuron"), out_dtype=torch.float32)
    with pytest.raises(RuntimeError, match="Bias must be BFloat16 to compute"):
        call(
            a,
            b,
            one,
            one,
            bias=torch.zeros(16, device="neuron", dtype=torch.half),
            out_dtype=torch.bfloat16,
        )
    with pytest.raises(RuntimeError, match="Bias must be size 16"):
        call(
            a,
            b,
            one,
            one,
            bias=torch.zeros(8, device="neuron", dtype=torch.bfloat16),
            out_dtype=torch.bfloat16,
        )
    with pytest.raises(ValueError, match="row-wise scaling"):
        call(a, b, torch.ones(16, 1), torch.ones(1, 16), out_dtype=torch.float8_e4m3fn)
    with pytest.raises(NotImplementedError, match="block-wise"):
        call(a, b, torch.ones(16, 1), torch.ones(1, 1))  # 1x128 blocks (K/128 = 1)
    with pytest.raises(RuntimeError, match="same device"):
        torch._scaled_mm(*neuron(a, b), one, one.to("neuron"))  # a CPU scale, even 0-dim
    # The process stays usable.
    out = call(a, b, one, one, out_dtype=torch.bfloat16)
    assert_within_rounding(out.cpu(), a, b, one, one)


def test_cpu_refuses_the_same_scaling_configurations():
    """Where the CPU checks what we check, its exception type is ours."""
    a, b = float8_operands(16, 32, 16)
    with pytest.raises(ValueError, match="Invalid scaling configuration"):
        torch._scaled_mm(a, b, torch.ones(16), torch.ones(16))
    with pytest.raises(ValueError, match="Invalid scaling configuration"):
        call(a, b, torch.ones(16), torch.ones(16))


# --- _scaled_grouped_mm -----------------------------------------------------------------------


def reference_scaled_grouped_mm(a, b, scale_a, scale_b, offs):
    """A float64 loop over the groups with each group's scales, as CUDA defines them."""
    a, b, scale_a, scale_b = a.double(), b.double(), scale_a.double(), scale_b.double()
    if a.dim() == 3 and b.dim() == 3:
        return torch.bmm(a, b) * scale_a.unsqueeze(2) * scale_b.unsqueeze(1)
    ends = offs.tolist()
    starts = [0] + ends[:-1]
    if a.dim() == 2 and b.dim() == 3:
        out = torch.zeros(a.shape[0], b.shape[-1], dtype=torch.float64)
        for g, (s, e) in enumerate(zip(starts, ends)):
            out[s:e] = (a[s:e] @ b[g]) * scale_a[s:e, None] * scale_b[g][None, :]
    elif a.dim() == 3 and b.dim() == 2:
        out = torch.zeros(a.shape[1], b.shape[1], dtype=torch.float64)
        for g, (s, e) in enumerate(zip(starts, ends)):
            out[:, s:e] = (a[g] @ b[:, s:e]) * scale_a[g][:, None] * scale_b[None, s:e]
    else:
        m, n = a.shape[0], b.shape[1]
        out = torch.zeros(len(ends), m, n, dtype=torch.float64)
        for g, (s, e) in enumerate(zip(starts, ends)):
            rows = scale_a[g * m : (g + 1) * m, None]
            cols = scale_b[None, g * n : (g + 1) * n]
            out[g] = (a[:, s:e] @ b[s:e]) * rows * cols
    return out


def grouped_case(case, seed=0):
    """Operands in CUDA's layouts (a row-major, b column-major) with their row-wise scales."""
    generator = torch.Generator().manual_seed(seed)

    def float8(*shape):
        return (torch.randn(*shape, generator=generator) * 4).to(torch.float8_e4m3fn)

    def scales(*shape):
        return torch.rand(*shape, generator=generator) * 0.5 + 0.01

    if case == "tokens_x_experts":  # 24 tokens, 4 experts (one empty), 4 tokens past the end
        a, b = float8(24, 32), float8(4, 16, 32).transpose(-2, -1)
        return a, b, scales(24), scales(4, 16), torch.tensor([5, 5, 13, 20], dtype=torch.int32)
    if case == "experts_x_tokens":
        a, b = float8(3, 16, 32), float8(48, 32).t()
        return a, b, scales(3, 16), scales(48), torch.tensor([16, 16, 32], dtype=torch.int32)
    if case == "weight_gradient":  # each group's slice of the tokens, one set of scales each
        a, b = float8(16, 64), float8(32, 64).t()
        offs = torch.tensor([16, 16, 48, 64], dtype=torch.int32)
        return a, b, scales(4 * 16), scales(4 * 32), offs
    a, b = float8(3, 16, 32), float8(3, 16, 32).transpose(-2, -1)
    return a, b, scales(3, 16), scales(3, 16), None


GROUPED_CASES = ["tokens_x_experts", "experts_x_tokens", "weight_gradient", "batched"]


@pytest.mark.parametrize("case", GROUPED_CASES)
def test_scaled_grouped_mm_matches_a_float64_loop_natively(case):
    a, b, scale_a, scale_b, offs = grouped_case(case)
    openneuron.clear_op_tracking()
    device_offs = None if offs is None else offs.to("neuron")
    out = torch._scaled_grouped_mm(*neuron(a, b, scale_a, scale_b), offs=device_offs)
    assert openneuron.get_fallback_ops() == {}
    meta = torch._scaled_grouped_mm(
        *[t.to("meta") for t in (a, b, scale_a, scale_b)],
        offs=None if offs is None else offs.to("meta"),
    )
    assert out.dtype == torch.bfloat16 and out.shape == meta.shape and out.stride() == meta.stride()
    expected = reference_scaled_grouped_mm(a, b, scale_a, scale_b, offs)
    # One bf16 rounding of an fp32 accumulator (measured: within half a bf16 ulp + fp32 noise).
    torch.testing.assert_close(out.cpu().double(), expected, rtol=2**-8, atol=1e-6)


def test_scaled_grouped_mm_refuses_what_cuda_refuses():
    a, b, scale_a, scale_b, offs = grouped_case("tokens_x_experts")
    a, b, scale_a, scale_b, offs = neuron(a, b, scale_a, scale_b, offs)
    with pytest.raises(ValueError, match="Expected mat2 to be transposed"):
        torch._scaled_grouped_mm(a, b.contiguous(), scale_a, scale_b, offs=offs)
    with pytest.raises(ValueError, match="Bias not supported"):
        torch._scaled_grouped_mm(a, b, scale_a, scale_b, offs=offs, bias=scale_b)
    with pytest.raises(ValueError, match="Only bf16"):
        torch._scaled_grouped_mm(a, b, scale_a, scale_b, offs=offs, out_dtype=torch.float32)
    with pytest.raises(ValueError, match="Have to provide offsets"):
        torch._scaled_grouped_mm(a, b, scale_a, scale_b)
    with pytest.raises(RuntimeError, match="scale must have the same length as mat"):
        torch._scaled_grouped_mm(a, b, scale_a[:8], scale_b, offs=offs)
    with pytest.raises(ValueError, match="Float8_e4m3"):
        torch._scaled_grouped_mm(a.to(torch.float8_e5m2), b, scale_a, scale_b, offs=offs)
