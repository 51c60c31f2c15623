"""Never finishes in time: the check must report a timeout, not hang."""

import time

import torch

x = torch.ones(4, device=torch.accelerator.current_accelerator())
time.sleep(600)
