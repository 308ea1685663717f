# test: reject --size N=4
import torch


def f(x: "float32[N]"):
    g = lambda t: t * 2
    return g(x)
# error: lambda expressions are not in the subset
# at: 6:9
