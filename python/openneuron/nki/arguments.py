"""Keyword arguments an NKI call does not take are errors that name the call, the argument and
the kernel line, never silently dropped."""

import functools
import inspect

from openneuron.nki import trace as tr

# Arguments of the public API that change nothing in the simulator when left at these values.
_NEUTRAL = {"mask": None}


def reject_unknown(function, qualified_name=None):
    """Wraps `function` (whose ``**_ignored`` catch-all once swallowed anything) so a keyword it
    does not name raises KernelTraceError ``unknown-argument``."""
    signature = inspect.signature(function)
    known = {
        name
        for name, parameter in signature.parameters.items()
        if parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL)
    }
    label = qualified_name or function.__name__

    @functools.wraps(function)
    def checked(*args, **kwargs):
        for name, value in kwargs.items():
            if name in known or (name in _NEUTRAL and value is _NEUTRAL[name]):
                continue
            tr.fail(
                "unknown-argument",
                f"{label}() got the keyword argument {name}={value!r}, which it does not take "
                f"(it takes: {', '.join(sorted(known))})",
            )
        return function(*args, **kwargs)

    return checked


def wrap_module(namespace, prefix):
    """Applies reject_unknown to every public function of a module namespace whose signature
    ends in the ``**_ignored`` catch-all."""
    for name, value in list(namespace.items()):
        if name.startswith("_") or not inspect.isfunction(value):
            continue
        parameters = inspect.signature(value).parameters.values()
        if any(p.kind == p.VAR_KEYWORD and p.name == "_ignored" for p in parameters):
            namespace[name] = reject_unknown(value, f"{prefix}.{name}")
