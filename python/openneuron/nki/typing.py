"""``nki.typing``: the annotations kernels put on their parameters (no effect on a trace)."""


class tensor:  # noqa: N801  (NKI's names)
    """An HBM tensor parameter."""


class mutable_tensor(tensor):  # noqa: N801
    """An HBM tensor parameter the kernel writes."""
