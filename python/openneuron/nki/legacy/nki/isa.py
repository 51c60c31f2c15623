"""``neuronxcc.nki.isa``: the older generation's ``nisa``."""

from openneuron.nki.isa import *  # noqa: F401,F403
