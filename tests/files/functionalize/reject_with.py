# test: reject --size N=4
# A construct outside the subset is named, with where it is.
import torch


def f(x: "float32[N]"):
    with torch.no_grad():
        y = x * 2
    return y
# error: `with` statements are not in the subset
# at: 7:5
