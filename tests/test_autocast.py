"""torch.autocast("neuron") applies CUDA's cast policies."""

import pytest
import torch
from torch import nn


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_matmuls_run_in_the_autocast_dtype(dtype):
    a = torch.randn(4, 8, device="neuron")
    b = torch.randn(8, 3, device="neuron")
    with torch.autocast("neuron", dtype=dtype):
        assert (a @ b).dtype == dtype
        assert torch.mm(a, b).dtype == dtype
        assert nn.functional.linear(a, b.t()).dtype == dtype
        assert torch.bmm(a[None], b[None]).dtype == dtype
    assert (a @ b).dtype == torch.float32  # outside the region nothing changes


def test_precision_sensitive_ops_run_in_float32():
    x = torch.randn(4, 8, device="neuron", dtype=torch.bfloat16)
    with torch.autocast("neuron", dtype=torch.bfloat16):
        assert torch.softmax(x, dim=-1).dtype == torch.float32
        assert torch.log_softmax(x, dim=-1).dtype == torch.float32
        assert nn.functional.mse_loss(x, x).dtype == torch.float32


def test_autocast_matmul_matches_bf16_inputs_with_fp32_accumulation():
    torch.manual_seed(0)
    a = torch.randn(16, 32)
    b = torch.randn(32, 8)
    with torch.autocast("neuron", dtype=torch.bfloat16):
        got = (a.to("neuron") @ b.to("neuron")).cpu()
    expected = (a.bfloat16().float() @ b.bfloat16().float()).bfloat16()
    # One bf16 rounding of an fp32-accumulated product: at most one bf16 ulp apart.
    torch.testing.assert_close(got, expected, rtol=8e-3, atol=1e-2)


def test_training_step_under_autocast_keeps_float32_master_weights():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to("neuron")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(5, 8, device="neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    optimizer.step()
    for parameter in model.parameters():
        assert parameter.dtype == torch.float32 and parameter.grad.dtype == torch.float32


def test_amp_supported_dtypes():
    assert torch.neuron.get_amp_supported_dtype() == [torch.bfloat16, torch.float16]
    assert torch.amp.is_autocast_available("neuron")
