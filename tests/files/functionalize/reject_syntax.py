# test: reject --size N=4
import torch


def f(x: "float32[N]"):
    y = x +
    return y
# error: Python syntax error
# at: 6:12
