"""``neuronxcc.nki.language``: the older generation's ``nl``."""

from openneuron.nki.language import *  # noqa: F401,F403
