# test: reject --size N=4
# A name first bound inside a loop is not visible after it.
import torch


def f(x: "float32[N]"):
    for i in range(2):
        z = x * 2
    return z
# error: `z` is not defined here
# at: 9:12
