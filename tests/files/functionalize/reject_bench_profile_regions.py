# test: reject bench --profile --size N=4
# A def with a loop runs its regions around compiled stages: there is no
# one program whose steps a profile could list. (Each iteration reads the
# element the previous one wrote, so the loop stays a loop.)
import torch


def f(x: "float32[N]"):
    y = x.clone()
    for i in range(3):
        y[i + 1] = y[i] * 2.0
    return y
# error: has loop or branch regions: `--constant` and `--profile` take defs without them
