"""Autograd and training on neuron match the same computation on CPU."""

import copy

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

# float32 losses after 20 optimizer steps; the issue asks for 1e-5 relative.
LOSS_RTOL = 1e-5


class TransformerBlock(nn.Module):
    """Pre-norm attention + MLP block, written with plain ops (no fused kernels)."""

    def __init__(self, width: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )
        self.head = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        split = lambda t: t.view(batch, seq, self.heads, -1).transpose(1, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        scores = q @ k.transpose(-2, -1) / (width // self.heads) ** 0.5
        attended = torch.softmax(scores, dim=-1) @ v
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, width))
        x = x + self.mlp(self.norm2(x))
        return self.head(x.mean(dim=1))


def make_mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)
    )


def train_losses(model: nn.Module, device: str, optimizer_name: str, steps: int = 20):
    model = copy.deepcopy(model).to(device)
    if optimizer_name == "sgd":
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    generator = torch.Generator().manual_seed(123)
    in_shape = (8, 16) if isinstance(model, nn.Sequential) else (4, 6, 32)
    losses = []
    for _ in range(steps):
        x = torch.randn(*in_shape, generator=generator).to(device)
        y = torch.randint(0, 10, (in_shape[0],), generator=generator).to(device)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model


@pytest.mark.parametrize("optimizer_name", ["sgd", "adamw"])
@pytest.mark.parametrize("model_factory", [make_mlp, TransformerBlock], ids=["mlp", "transformer"])
def test_training_matches_cpu(model_factory, optimizer_name):
    torch.manual_seed(0)
    model = model_factory()
    neuron_losses, neuron_model = train_losses(model, "neuron", optimizer_name)
    cpu_losses, cpu_model = train_losses(model, "cpu", optimizer_name)
    torch.testing.assert_close(neuron_losses, cpu_losses, rtol=LOSS_RTOL, atol=0)
    for (name, trained), reference in zip(
        neuron_model.state_dict().items(), cpu_model.state_dict().values(), strict=True
    ):
        assert trained.device.type == "neuron", name
        trained = trained.cpu()
        if name == "qkv.bias":
            # The key bias has an exactly-zero true gradient (softmax ignores a constant
            # shift), so AdamW normalises rounding noise into lr-sized steps: skip that slice.
            width = trained.numel() // 3
            trained = torch.cat([trained[:width], trained[2 * width :]])
            reference = torch.cat([reference[:width], reference[2 * width :]])
        torch.testing.assert_close(trained, reference, rtol=1e-4, atol=1e-5, msg=name)


def test_memory_returns_to_start_after_training():
    torch.neuron.synchronize()
    start = torch.neuron.memory_allocated()
    torch.manual_seed(0)
    losses, model = train_losses(make_mlp(), "neuron", "adamw", steps=5)
    assert torch.neuron.memory_allocated() > start
    del model
    assert torch.neuron.memory_allocated() == start


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gradients_match_cpu(dtype):
    torch.manual_seed(1)
    a = torch.randn(5, 7, dtype=dtype)
    b = torch.randn(7, 3, dtype=dtype)
    bias = torch.randn(3, dtype=dtype)
    results = {}
    for device in ("cpu", "neuron"):
        leaves = [t.detach().to(device).requires_grad_() for t in (a, b, bias)]
        out = torch.softmax(torch.relu(leaves[0] @ leaves[1] + leaves[2]) * 2 - 1, dim=-1)
        out.sum().backward()
        results[device] = [out.detach().cpu()] + [leaf.grad.cpu() for leaf in leaves]
    tolerance = (
        {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 2e-2, "atol": 2e-2}
    )
    for got, expected in zip(results["neuron"], results["cpu"], strict=True):
        torch.testing.assert_close(got, expected, **tolerance)


def test_in_place_ops_and_views_under_autograd():
    base = torch.randn(4, 6)
    on_device = base.to("neuron")
    view = on_device.t()[1:3]
    view.mul_(3).add_(1)
    expected = base.clone()
    expected.t()[1:3].mul_(3).add_(1)
    torch.testing.assert_close(on_device.cpu(), expected)

    weight = torch.randn(6, 6, device="neuron", requires_grad=True)
    out = weight.expand(2, 6, 6).reshape(12, 6).sum()
    out.backward()
    torch.testing.assert_close(weight.grad.cpu(), torch.full((6, 6), 2.0))


def test_no_grad_disables_graph_recording():
    weight = torch.randn(3, 3, device="neuron", requires_grad=True)
    with torch.no_grad():
        out = weight * 2
    assert out.grad_fn is None and not out.requires_grad


def test_dataloader_with_pinned_memory_and_non_blocking_copies():
    generator = torch.Generator().manual_seed(5)
    data = TensorDataset(
        torch.randn(64, 16, generator=generator), torch.randint(0, 10, (64,), generator=generator)
    )
    loader = DataLoader(data, batch_size=16, pin_memory=True)
    total = torch.zeros((), device="neuron")
    for x, y in loader:
        assert x.is_pinned()
        x = x.to("neuron", non_blocking=True)
        y = y.to("neuron", non_blocking=True)
        total += x.sum() + y.float().sum()
    torch.neuron.synchronize()
    expected = data.tensors[0].sum() + data.tensors[1].float().sum()
    torch.testing.assert_close(total.cpu(), expected, rtol=1e-5, atol=1e-4)


def test_module_neuron_moves_parameters_and_buffers():
    model = nn.BatchNorm1d(4).neuron()
    assert all(p.is_neuron for p in model.parameters())
    assert all(b.is_neuron for b in model.buffers())


def test_tied_weights_stay_tied_after_moving_to_the_device():
    # Module.to() must keep one Parameter for weights shared by two modules (as on CUDA),
    # or each copy gets half the gradient.
    torch.manual_seed(0)
    embedding = nn.Embedding(10, 4)
    head = nn.Linear(4, 10, bias=False)
    head.weight = embedding.weight
    model = nn.ModuleList([embedding, head]).to("neuron")
    assert model[0].weight is model[1].weight and model[0].weight.is_neuron
    tokens = torch.tensor([1, 2, 3], device="neuron")
    model[1](model[0](tokens)).sum().backward()

    torch.manual_seed(0)  # the same initial weights, on the CPU
    cpu_embedding = nn.Embedding(10, 4)
    cpu_head = nn.Linear(4, 10, bias=False)
    cpu_head.weight = cpu_embedding.weight
    cpu_head(cpu_embedding(tokens.cpu())).sum().backward()
    torch.testing.assert_close(model[0].weight.grad.cpu(), cpu_embedding.weight.grad)
