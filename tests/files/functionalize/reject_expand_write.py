# test: reject --size N=4
# Writing through an expanded view would write one element several
# times; PyTorch refuses it too.
import torch


def f(x: "float32[N]"):
    a = torch.zeros(1)
    e = a.expand(4)
    e.add_(x)
    return a
# error: writing through an expanded view
# at: 10:5
