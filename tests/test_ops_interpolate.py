"""Interpolation (F.interpolate / upsample_*) on neuron vs PyTorch CPU, forward and gradient.

Every mode the device implements (nearest and nearest-exact 1-D/2-D/3-D, linear, bilinear,
trilinear, bicubic), both align_corners settings, sizes and scale factors (up, down, non-integer),
fp32/bf16/fp16, channels_last and non-contiguous inputs; results must keep the CPU's strides and
nothing may run on the host fallback.
"""

import warnings

import pytest
import torch
import torch.nn.functional as F
from kernel_mutants import kernel_replaced

import openneuron

DEVICE = "neuron"
FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]

# (mode, spatial dims, align_corners values) for every mode with a native kernel.
MODES = [
    ("nearest", 1, [None]),
    ("nearest", 2, [None]),
    ("nearest", 3, [None]),
    ("nearest-exact", 1, [None]),
    ("nearest-exact", 2, [None]),
    ("nearest-exact", 3, [None]),
    ("linear", 1, [False, True]),
    ("bilinear", 2, [False, True]),
    ("trilinear", 3, [False, True]),
    ("bicubic", 2, [False, True]),
]
CASES = [
    pytest.param(mode, dims, align, id=f"{mode}{dims}d-align{align}")
    for mode, dims, aligns in MODES
    for align in aligns
]
# Spatial input sizes per rank, and how the output size is asked for: x2 (PyTorch's integer
# shortcut for nearest), non-integer factors up and down (the ratio is 1/scale, not in/out), a
# size that shrinks some axes and grows others.
INPUT_SPATIAL = {1: (7,), 2: (5, 6), 3: (3, 4, 5)}
RESIZES = {
    "x2": lambda dims: dict(scale_factor=2.0),
    "x1.7": lambda dims: dict(scale_factor=1.7),
    "x0.6": lambda dims: dict(scale_factor=0.6),
    "size": lambda dims: dict(size=(2, 11, 4)[-dims:]),
}


def interpolation_fallbacks():
    return {op: n for op, n in openneuron.get_fallback_ops().items() if "upsample" in op}


def interpolate(x, mode, align, **resize):
    options = {} if align is None else dict(align_corners=align)
    return F.interpolate(x, mode=mode, **options, **resize)


def forward_backward(fn, x, grad_out):
    x = x.detach().requires_grad_()
    y = fn(x)
    y.backward(grad_out)
    return y, x.grad


def compare(fn, x, dtype=torch.float32, view=lambda t: t, strict_strides=True):
    """fn on neuron vs CPU: 16-bit results against the CPU in fp32 rounded once (decision 4)."""
    x = x.to(dtype)
    with torch.no_grad():
        shape = fn(view(x.float())).shape
    grad_out = torch.randn(shape).to(dtype)

    openneuron.clear_op_tracking()
    x_dev = view(x.to(DEVICE))
    out, grad = forward_backward(fn, x_dev, grad_out.to(DEVICE))
    assert interpolation_fallbacks() == {}
    assert out.dtype == grad.dtype == dtype

    x_ref = view(x.float())
    ref_out, ref_grad = forward_backward(fn, x_ref, grad_out.float())
    torch.testing.assert_close(out.cpu(), ref_out.to(dtype))
    torch.testing.assert_close(grad.cpu(), ref_grad.to(dtype))
    if strict_strides:
        # The strides the CPU kernel gives at this layout (meta kernels promise the same).
        cpu_out, cpu_grad = forward_backward(fn, view(x.float()), grad_out.float())
        assert out.stride() == cpu_out.stride()
        assert grad.stride() == cpu_grad.stride()
    return out, grad


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("resize", list(RESIZES))
@pytest.mark.parametrize("mode,dims,align", CASES)
def test_interpolate_matches_cpu(mode, dims, align, resize, dtype):
    torch.manual_seed(0)
    x = torch.randn(2, 3, *INPUT_SPATIAL[dims])
    options = RESIZES[resize](dims)
    compare(lambda t: interpolate(t, mode, align, **options), x, dtype)


@pytest.mark.parametrize("mode,dims,align", [c for c in CASES if c.values[1] > 1])
def test_channels_last_keeps_the_cpu_layout(mode, dims, align):
    torch.manual_seed(1)
    x = torch.randn(2, 5, *INPUT_SPATIAL[dims])
    layout = torch.channels_last if dims == 2 else torch.channels_last_3d
    out, _ = compare(
        lambda t: interpolate(t, mode, align, scale_factor=1.5),
        x,
        view=lambda t: t.contiguous(memory_format=layout),
    )
    if mode != "bicubic" and not (mode.startswith("nearest") and dims == 3):
        assert out.is_contiguous(memory_format=layout)


@pytest.mark.parametrize("mode,dims,align", CASES)
def test_non_contiguous_input(mode, dims, align):
    torch.manual_seed(2)
    spatial = INPUT_SPATIAL[dims]
    # Every other channel of a transposed buffer: neither contiguous nor channels_last.
    x = torch.randn(6, 2, *spatial)
    compare(
        lambda t: interpolate(t, mode, align, scale_factor=2.5),
        x,
        view=lambda t: t.transpose(0, 1)[:, ::2],
    )


def test_large_plane_and_single_plane_match_cpu():
    # One plane (N*C = 1) spreads its rows over the cores; many planes spread planes.
    torch.manual_seed(3)
    compare(lambda t: F.interpolate(t, scale_factor=2, mode="bilinear"), torch.randn(1, 1, 64, 80))
    compare(lambda t: F.interpolate(t, scale_factor=2, mode="nearest"), torch.randn(4, 64, 16, 16))


def test_backward_is_deterministic():
    torch.manual_seed(4)
    x = torch.randn(2, 8, 9, 13, device=DEVICE, requires_grad=True)
    g = torch.randn(2, 8, 4, 5, device=DEVICE)
    grads = []
    for _ in range(2):
        x.grad = None
        F.interpolate(x, size=(4, 5), mode="bicubic").backward(g)
        grads.append(x.grad.cpu())
    assert torch.equal(grads[0], grads[1])


def test_zero_batch():
    compare(lambda t: F.interpolate(t, scale_factor=2, mode="bilinear"), torch.randn(0, 3, 4, 4))


def test_out_variants_and_explicit_ops():
    torch.manual_seed(5)
    x = torch.randn(2, 3, 4, 5)
    out = torch.empty(0, device=DEVICE)
    openneuron.clear_op_tracking()
    torch._C._nn.upsample_bilinear2d(x.to(DEVICE), [7, 9], True, out=out)
    torch.testing.assert_close(out.cpu(), torch._C._nn.upsample_bilinear2d(x, [7, 9], True))
    grad = torch.empty(0, device=DEVICE)
    go = torch.randn(2, 3, 8, 10)
    torch.ops.aten.upsample_nearest2d_backward.grad_input(
        go.to(DEVICE), [8, 10], [2, 3, 4, 5], grad_input=grad
    )
    torch.testing.assert_close(
        grad.cpu(), torch.ops.aten.upsample_nearest2d_backward(go, [8, 10], [2, 3, 4, 5])
    )
    assert interpolation_fallbacks() == {}
    assert openneuron.get_executed_ops().get("aten::upsample_bilinear2d.out", 0) >= 1


def test_float64_runs_on_the_host_fallback_visibly():
    x = torch.randn(1, 2, 3, 3, dtype=torch.float64)
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = F.interpolate(x.to(DEVICE).to(memory_format=torch.channels_last), scale_factor=2)
    torch.testing.assert_close(out.cpu(), F.interpolate(x, scale_factor=2))
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert "aten::upsample_nearest2d.out" in openneuron.get_fallback_ops()


@pytest.mark.parametrize(
    "call",
    [
        lambda t: torch._C._nn.upsample_nearest2d(t[0], [4, 4]),  # 3-D input
        lambda t: torch._C._nn.upsample_bilinear2d(t, [4, 0], False),  # empty output
        lambda t: torch._C._nn.upsample_nearest2d(t[:0, :0], [4, 4]),  # no channels
        lambda t: torch.ops.aten.upsample_nearest2d_backward(t, [4, 4], [2, 3, 2, 2]),
    ],
)
def test_errors_match_the_cpu(call):
    x = torch.randn(2, 3, 3, 3)
    with pytest.raises(RuntimeError) as cpu_error:
        call(x)
    with pytest.raises(RuntimeError) as neuron_error:
        call(x.to(DEVICE))
    assert str(neuron_error.value) == str(cpu_error.value)


def bilinear_with_align_corners_flipped(
    x, output_size, align_corners, scales_h=None, scales_w=None
):
    wrong = torch._C._nn.upsample_bilinear2d(x.cpu(), output_size, not align_corners)
    return wrong.to(x.device)


def test_comparison_catches_a_wrong_kernel():
    # The checks above would pass a kernel that mixes up align_corners if they could not tell.
    x = torch.randn(1, 2, 5, 6)
    fn = lambda t: F.interpolate(t, scale_factor=2, mode="bilinear", align_corners=True)  # noqa: E731
    with kernel_replaced("upsample_bilinear2d", bilinear_with_align_corners_flipped):
        with pytest.raises(AssertionError):
            compare(fn, x)
    compare(fn, x)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize(
    "shape,size", [((2, 3, 7), 11), ((2, 3, 5, 6), (9, 4)), ((1, 2, 3, 4, 5), (5, 3, 7))]
)
def test_nearest_modes_of_uint8_images_match_cpu(mode, shape, size):
    # The CPU resizes uint8 images with the nearest modes; the device copies the same elements.
    torch.manual_seed(2)
    x = torch.randint(0, 256, shape, dtype=torch.uint8)
    if len(shape) == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    openneuron.clear_op_tracking()
    got = torch.nn.functional.interpolate(x.to("neuron"), size=size, mode=mode)
    assert openneuron.get_fallback_ops() == {}
    want = torch.nn.functional.interpolate(x, size=size, mode=mode)
    assert got.dtype == torch.uint8 and torch.equal(got.cpu(), want)
    assert got.stride() == want.stride()
