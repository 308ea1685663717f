# test: reject --size N=4 --size M=3
# A view chosen in a branch, written after the branch: which storage the
# write reaches depends on the branch (may-alias), which TensorSSA's
# conversion does not take; tessera refuses rather than guess.
import torch


def f(x: "float32[N, M]", k: "float32[1]"):
    a = x.clone()
    if k.sum() > 0:
        v = a[0]
    else:
        v = a[1]
    v.fill_(0.0)
    return a
# error: in-place update of `v`, whose storage may be shared through a loop or branch
# at: 14:5
