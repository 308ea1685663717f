# test: reject --size N=4
# A value rebound in a loop keeps its shape across iterations.
import torch


def f(x: "float32[N]"):
    y = x
    for i in range(2):
        y = torch.cat([y, y], 0)
    return y
# error: `y` changes type in the loop
# at: 8:5
