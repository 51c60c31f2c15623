"""NKI kernels called on PyTorch tensors (placeholder replaced below)."""
