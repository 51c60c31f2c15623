"""SGD(momentum), Adam and AdamW with foreach=True and fused=True train a small MLP on neuron
exactly like the same optimizer on CPU, with no host fallbacks."""

import copy

import pytest
import torch
from torch import nn

import openneuron

# Parameters after 10 steps. foreach runs the same fp32 op sequence as CPU, so it is tight; the
# fused kernel rounds its coefficients to fp32 once (as CPU's fused kernel does) but evaluates in a
# different order than CPU's vectorized loop, so allow a few fp32 ulp per step, accumulated.
TOLERANCE = {"foreach": dict(rtol=1e-5, atol=1e-6), "fused": dict(rtol=1e-5, atol=1e-6)}

OPTIMIZERS = {
    "sgd": lambda params, mode: torch.optim.SGD(
        params, lr=0.05, momentum=0.9, weight_decay=1e-3, **{mode: True}
    ),
    "sgd_nesterov_maximize": lambda params, mode: torch.optim.SGD(
        params, lr=0.05, momentum=0.9, nesterov=True, maximize=True, **{mode: True}
    ),
    "sgd_plain": lambda params, mode: torch.optim.SGD(params, lr=0.05, **{mode: True}),
    "adam": lambda params, mode: torch.optim.Adam(
        params, lr=1e-2, weight_decay=1e-3, **{mode: True}
    ),
    "adamw": lambda params, mode: torch.optim.AdamW(
        params, lr=1e-2, weight_decay=1e-2, **{mode: True}
    ),
    "adamw_amsgrad": lambda params, mode: torch.optim.AdamW(
        params, lr=1e-2, amsgrad=True, **{mode: True}
    ),
}


def train(model, device, make_optimizer, steps=10):
    model = copy.deepcopy(model).to(device)
    optimizer = make_optimizer(model.parameters())
    generator = torch.Generator().manual_seed(7)
    for _ in range(steps):
        x = torch.randn(8, 16, generator=generator).to(device)
        y = torch.randn(8, 4, generator=generator).to(device)
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()  # plain native ops (mse_loss is another family's)
        loss.backward()
        optimizer.step()
    return model


@pytest.mark.parametrize("mode", ["foreach", "fused"])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_matches_cpu(name, mode):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
    make = lambda params: OPTIMIZERS[name](params, mode)  # noqa: E731
    cpu = train(model, "cpu", make)
    openneuron.clear_op_tracking()
    dev = train(model, "neuron", make)
    assert openneuron.get_fallback_ops() == {}
    executed = openneuron.get_executed_ops()
    if mode == "fused":
        assert any(op.startswith("aten::_fused_") for op in executed)
    else:
        assert any(op.startswith("aten::_foreach_") for op in executed)
    for (key, got), want in zip(dev.state_dict().items(), cpu.state_dict().values(), strict=False):
        torch.testing.assert_close(got.cpu(), want, **TOLERANCE[mode], msg=key)
