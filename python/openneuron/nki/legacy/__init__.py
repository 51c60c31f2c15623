"""``neuronxcc`` when AWS's compiler package is absent: its ``nki`` subpackage is the older
generation of the NKI API (``from neuronxcc import nki``, ``neuronxcc.nki.language``, ...)."""
