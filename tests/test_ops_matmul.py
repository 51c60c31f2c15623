"""Matrix products on neuron against the CPU: forward, gradients, layouts, out= and in-place.

Tolerances: fp32 products accumulate in fp32 on both devices (blocking orders differ):
rtol 1.3e-6 * sqrt(K)-ish, so 1e-5; bf16 results are one bf16 rounding of an fp32
accumulation: rtol 1.6e-2 (2^-6), atol scaled to the operands' magnitude.
"""

import warnings

import pytest
import torch

import openneuron

# float32: blocked fp32 sums in another order than CPU's, measured up to 1.8e-5 relative
# (4.8e-7 absolute at these sizes). bfloat16: measured bit-exact, forward and gradients (the
# same oneDNN bf16 GEMM with fp32 accumulation and one rounding as CPU), so assert_close's
# bfloat16 defaults, which a single extra rounding of an intermediate would exceed.
TOLERANCE = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-5),
}
DTYPES = [torch.float32, torch.bfloat16]


def on_both(fn, *tensors, grad=True):
    """fn on CPU and on neuron copies; returns (cpu out, neuron out, cpu grads, neuron grads)."""
    results = []
    for device in ("cpu", "neuron"):
        leaves = [
            t.detach().to(device).requires_grad_(grad and t.is_floating_point()) for t in tensors
        ]
        out = fn(*leaves)
        grads = []
        if grad:
            out.float().square().sum().backward()
            grads = [leaf.grad.cpu() for leaf in leaves]
        results.append((out.detach().cpu(), grads))
    return results


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "name, fn, shapes",
    [
        ("mm", torch.mm, [(8, 5), (5, 7)]),
        ("mm_transposed", lambda a, b: a.t() @ b.t(), [(5, 8), (7, 5)]),
        (
            "addmm",
            lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0),
            [(7,), (8, 5), (5, 7)],
        ),
        ("bmm", torch.bmm, [(3, 4, 5), (3, 5, 6)]),
        (
            "baddbmm",
            lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=2.0),
            [(3, 4, 6), (3, 4, 5), (3, 5, 6)],
        ),
        ("baddbmm_broadcast_bias", torch.baddbmm, [(6,), (3, 4, 5), (3, 5, 6)]),
        ("matmul_broadcast", torch.matmul, [(2, 3, 4, 5), (5, 6)]),
        ("linear", torch.nn.functional.linear, [(2, 3, 5), (7, 5), (7,)]),
    ],
)
def test_forward_and_gradients_match_cpu(name, fn, shapes, dtype):
    torch.manual_seed(0)
    tensors = [torch.randn(*shape, dtype=dtype) for shape in shapes]
    openneuron.clear_op_tracking()
    (cpu_out, cpu_grads), (dev_out, dev_grads) = on_both(fn, *tensors)
    assert openneuron.get_fallback_ops() == {}
    torch.testing.assert_close(dev_out, cpu_out, **TOLERANCE[dtype])
    for got, expected in zip(dev_grads, cpu_grads):
        torch.testing.assert_close(
            got.float(),
            expected.float(),
            rtol=TOLERANCE[dtype]["rtol"],
            atol=TOLERANCE[dtype]["atol"] if dtype == torch.bfloat16 else 1e-4,
        )


@pytest.mark.parametrize("dtype", DTYPES)
def test_out_and_in_place_variants(dtype):
    torch.manual_seed(1)
    a, b, c = (
        torch.randn(4, 3, dtype=dtype),
        torch.randn(3, 5, dtype=dtype),
        torch.randn(4, 5, dtype=dtype),
    )
    out = torch.empty(0, dtype=dtype, device="neuron")
    torch.mm(a.neuron(), b.neuron(), out=out)
    torch.testing.assert_close(out.cpu(), torch.mm(a, b), **TOLERANCE[dtype])
    in_place = c.neuron()
    in_place.addmm_(a.neuron(), b.neuron())
    torch.testing.assert_close(in_place.cpu(), c.addmm(a, b), **TOLERANCE[dtype])
    batch = c[None].repeat(2, 1, 1).neuron()
    batch.baddbmm_(a[None].repeat(2, 1, 1).neuron(), b[None].repeat(2, 1, 1).neuron())
    torch.testing.assert_close(batch.cpu()[1], c.addmm(a, b), **TOLERANCE[dtype])


def test_large_products_split_across_threads_match_cpu():
    torch.manual_seed(2)
    a, b = torch.randn(513, 300), torch.randn(300, 257)
    torch.testing.assert_close((a.neuron() @ b.neuron()).cpu(), a @ b, rtol=1e-4, atol=1e-4)


def test_zero_size_and_empty_reduction_dimension():
    a, b = torch.randn(0, 3), torch.randn(3, 4)
    assert (a.neuron() @ b.neuron()).shape == (0, 4)
    zero_k = torch.randn(2, 0).neuron() @ torch.randn(0, 3).neuron()
    torch.testing.assert_close(zero_k.cpu(), torch.zeros(2, 3))


def test_mismatched_shapes_and_dtypes_raise_like_cpu():
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.mm(torch.randn(2, 3, device="neuron"), torch.randn(4, 5, device="neuron"))
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.mm(
            torch.randn(2, 3, device="neuron"),
            torch.randn(3, 2, device="neuron", dtype=torch.bfloat16),
        )


@pytest.mark.parametrize("dtype", DTYPES + [torch.float16])
def test_dot_matches_cpu_natively(dtype):
    torch.manual_seed(0)
    a, b = torch.randn(64, dtype=dtype), torch.randn(128, dtype=dtype)[::2]  # b strided
    openneuron.clear_op_tracking()
    (cpu, cpu_grads), (neuron, neuron_grads) = on_both(torch.dot, a, b)
    assert openneuron.get_fallback_ops() == {}
    tolerance = TOLERANCE.get(dtype, dict(rtol=2e-3, atol=1e-2))  # fp16: one fp16 rounding
    torch.testing.assert_close(neuron, cpu, **tolerance)
    for got, want in zip(neuron_grads, cpu_grads):
        torch.testing.assert_close(got, want, **tolerance)
    out = torch.empty((), dtype=dtype, device="neuron")
    torch.dot(a.to("neuron"), b.to("neuron"), out=out)
    torch.testing.assert_close(out.cpu(), cpu, **tolerance)


def test_dot_edge_cases_and_errors():
    empty = torch.empty(0, device="neuron")
    assert torch.dot(empty, empty).item() == 0.0
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        torch.dot(torch.ones(2, 2, device="neuron"), torch.ones(2, 2, device="neuron"))
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        torch.dot(torch.ones(3, device="neuron"), torch.ones(4, device="neuron"))
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.dot(torch.ones(3, device="neuron"), torch.ones(3, device="neuron").bfloat16())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32], ids=str)
@pytest.mark.parametrize("self_shape", [(4, 6), (6,), (1, 6), ()])
def test_in_place_addbmm_resizes_a_broadcast_self_as_the_cpu(dtype, self_shape):
    # The CPU's addbmm_ reads a broadcastable self as the bias, then resizes it to the product.
    torch.manual_seed(5)
    self = torch.randint(-3, 4, self_shape).to(dtype)
    batch1 = torch.randint(-3, 4, (3, 4, 5)).to(dtype)
    batch2 = torch.randint(-3, 4, (3, 5, 6)).to(dtype)
    device_self = self.to("neuron")
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the CPU may warn about resizing a non-empty tensor
        device_self.addbmm_(batch1.to("neuron"), batch2.to("neuron"), beta=2, alpha=3)
        want = self.clone().addbmm_(batch1, batch2, beta=2, alpha=3)
    assert openneuron.get_fallback_ops() == {}
    assert device_self.shape == want.shape == (4, 6)
    torch.testing.assert_close(device_self.cpu(), want, rtol=1e-2, atol=1e-2)
