# test: reject --size N=4
import torch


def f(x: "float32[N]"):
    for i in range(3):
        return x
    return x
# error: `return` is only allowed as the last statement of a def
# at: 7:9
