"""The dtypes the device computes natively (the NeuronCore types), as the tests sweep them."""

import torch

INTEGER_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
NATIVE_DTYPES = [torch.bool, *INTEGER_DTYPES, torch.float16, torch.bfloat16, torch.float32]
