# test: reject --size N=4 --size M=3
# A slice assignment whose value does not fit the view (PyTorch raises
# here too).
import torch


def f(x: "float32[N, M]", y: "float32[2, M]"):
    z = x.clone()
    z[1:4] = y
    return z
# error: a value of shape [2, 3] cannot be written into a view of shape [3, 3]
# at: 9:5
