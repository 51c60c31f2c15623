"""The portability lint of `openneuron check`: each rule on a snippet that has the problem, and
none on clean code."""

import textwrap

from openneuron.check.lint import lint_source


def rules(source: str) -> list[tuple[str, int]]:
    return [(f.rule, f.line) for f in lint_source(textwrap.dedent(source))]


def test_hard_coded_cuda_and_torch_cuda_calls():
    found = rules("""
        import torch
        x = torch.ones(2, device="cuda")
        y = x.cuda()
        torch.cuda.synchronize()
        z = torch.zeros(2, device="cuda:1")
    """)
    assert ("hard-coded-cuda", 3) in found
    assert ("hard-coded-cuda", 4) in found
    assert ("torch-cuda-call", 5) in found
    assert ("hard-coded-cuda", 6) in found


def test_float64_forms():
    found = rules("""
        import torch
        a = torch.zeros(2, dtype=torch.float64)
        b = a.double()
        c = torch.ones(2, dtype=torch.double)
    """)
    assert [r for r in found if r[0] == "float64"] == [
        ("float64", 3),
        ("float64", 4),
        ("float64", 5),
    ]


def test_custom_extensions_and_autograd_functions():
    found = rules("""
        from torch.utils.cpp_extension import load_inline
        import torch
        ext = load_inline(name="x", cpp_sources="")
        y = torch.ops.mylib.fused(torch.ones(1))
        class F(torch.autograd.Function):
            pass
    """)
    assert ("custom-extension", 2) in found
    assert ("custom-extension", 4) in found
    assert ("custom-extension", 5) in found
    assert ("custom-autograd-function", 6) in found


def test_non_deterministic_and_data_dependent_ops():
    found = rules("""
        import torch
        t = torch.zeros(4)
        t.index_add_(0, torch.tensor([0]), torch.ones(1))
        idx = t.nonzero()
        u = torch.unique(t)
    """)
    assert ("non-deterministic", 4) in found
    assert ("data-dependent-shape", 5) in found
    assert ("data-dependent-shape", 6) in found


def test_clean_code_has_no_findings():
    assert (
        rules("""
        import torch
        device = torch.accelerator.current_accelerator()
        x = torch.ones(2, device=device, dtype=torch.float32)
        y = torch.ops.aten.add(x, x)
    """)
        == []
    )


def test_syntax_error_gives_no_findings():
    assert lint_source("def broken(:\n") == []
