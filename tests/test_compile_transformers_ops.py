"""The neuron kernels given to transformers' grouped-product ops (used under torch.compile for
non-bf16 experts) are registered only for the ops as transformers defines them: an op of the
same name with another schema keeps its own implementation. Each case runs in a fresh
interpreter, as the ops' namespace is process-wide."""

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_the_ops_as_transformers_defines_them_get_device_kernels():
    out = run(
        """
        import torch, openneuron
        from openneuron.compile import transformers_grouped_mm
        before = transformers_grouped_mm.register_if_loaded()
        import transformers.integrations.moe  # defines the ops
        after = transformers_grouped_mm.register_if_loaded()
        x = torch.randn(6, 4, device="neuron")
        w = torch.randn(2, 4, 3, device="neuron")
        offs = torch.tensor([2, 5], device="neuron")  # int64, as transformers may pass
        openneuron.clear_op_tracking()
        got = torch.ops.transformers.grouped_mm_fallback(x, w, offs)
        ran = openneuron.get_executed_ops().get("aten::_grouped_mm", 0)
        expected = torch.zeros(6, 3)
        expected[:2] = x[:2].cpu() @ w[0].cpu()
        expected[2:5] = x[2:5].cpu() @ w[1].cpu()
        torch.testing.assert_close(got.cpu(), expected)
        print(before, after, ran)
        """
    )
    assert out == "False True 1"


def test_an_op_of_the_same_name_with_another_schema_is_left_alone():
    out = run(
        """
        import torch, openneuron
        from openneuron.compile import transformers_grouped_mm

        @torch.library.custom_op("transformers::grouped_mm_fallback", mutates_args=())
        def other(input: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
            return input.clone()

        @torch.library.custom_op("transformers::grouped_mm_fallback_backward", mutates_args=())
        def other_backward(input: torch.Tensor) -> torch.Tensor:
            return input.clone()

        print(transformers_grouped_mm.register_if_loaded())
        """
    )
    assert out == "False"
