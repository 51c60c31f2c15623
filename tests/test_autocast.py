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


def test_binary_cross_entropy_is_refused_as_unsafe_and_its_logits_form_runs():
    probabilities = torch.rand(6, device="neuron")
    targets = torch.rand(6, device="neuron")
    with torch.autocast("neuron", dtype=torch.bfloat16):
        with pytest.raises(
            RuntimeError, match="unsafe to autocast.*binary_cross_entropy_with_logits"
        ):
            nn.functional.binary_cross_entropy(probabilities, targets)
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            nn.BCELoss()(probabilities, targets)
        loss = nn.functional.binary_cross_entropy_with_logits(probabilities, targets)
    assert loss.dtype == torch.float32  # a precision-sensitive op: fp32 under autocast
    # Outside the region it runs, and the refusal left the process usable.
    assert torch.isfinite(nn.functional.binary_cross_entropy(probabilities, targets))


def test_autocast_covers_every_op_cudas_autocast_does():
    """The ops with an autocast kernel on neuron are CUDA's, less its cuDNN-only convolutions;
    so an op CUDA's autocast casts or refuses (binary_cross_entropy) is cast or refused here."""
    cuda = set(torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCUDA"))
    neuron = set(torch._C._dispatch_get_registrations_for_dispatch_key("AutocastPrivateUse1"))
    cuda_only = {"aten::cudnn_convolution", "aten::cudnn_convolution_transpose"}
    assert "aten::binary_cross_entropy" in neuron
    assert neuron == cuda - cuda_only
