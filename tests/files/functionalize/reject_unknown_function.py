# test: reject --size N=4
import torch


def f(x: "float32[N]"):
    return torch.fft(x)
# error: `torch.fft` is not in the subset
# at: 6:12
