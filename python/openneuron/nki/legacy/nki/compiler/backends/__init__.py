"""``neuronxcc.nki.compiler.backends``: only the names kernels import for annotations."""
