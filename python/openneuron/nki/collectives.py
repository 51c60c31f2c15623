"""``nki.collectives``: the names of the collective-communication API, so kernels that import
them load. Collectives between ranks (devices) are not simulated: every operation raises a
named ``unsupported`` error when a kernel calls it. ``ReplicaGroup`` holds its rank lists."""

from openneuron.nki import trace as _tr


class ReplicaGroup:
    """The ranks that take part in a collective, as lists of rank ids per group."""

    def __init__(self, groups):
        self.groups = [list(group) for group in groups]

    def __repr__(self):
        return f"ReplicaGroup({self.groups})"


def _not_simulated(name):
    def operation(*args, **kwargs):
        _tr.fail(
            "unsupported", f"nki.collectives.{name}: collectives between ranks are not simulated"
        )

    operation.__name__ = name
    operation.__doc__ = f"``nki.collectives.{name}``: named, not simulated (raises unsupported)."
    return operation


for _name in (
    "all_gather",
    "all_reduce",
    "all_to_all",
    "collective_permute",
    "collective_permute_implicit",
    "collective_permute_implicit_current_processing_rank_id",
    "rank_id",
    "reduce_scatter",
    "send",
    "recv",
):
    globals()[_name] = _not_simulated(_name)
del _name
