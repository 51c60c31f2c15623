"""Errors a kernel author can act on: each names the rule it broke and the kernel's line."""


class KernelRuleError(RuntimeError):
    """A kernel broke a NeuronCore rule (``rule`` names it, ``line`` is the kernel's line)."""

    def __init__(self, rule: str, line: int, message: str):
        super().__init__(message)
        self.rule = rule
        self.line = line


class KernelTraceError(KernelRuleError):
    """A call in the kernel cannot be traced (wrong arguments, unsupported feature)."""
