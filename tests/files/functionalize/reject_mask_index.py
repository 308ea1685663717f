# test: reject --size N=4
import torch


def f(x: "float32[N]"):
    return x[x > 0]
# error: boolean-mask indexing has a data-dependent shape
# at: 6:14
