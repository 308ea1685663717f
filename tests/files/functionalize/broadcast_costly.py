# test: functionalize --size N=2 --size C=3 --fuse
# A costly per-row result read along a row (FCOS's centerness, broadcast
# over the classes): substituted, its sigmoid would be computed once per
# point of the product (6) instead of once per row (2), so it stays a
# tensor. The cheap per-row offset is substituted where it is read.
import torch


def gate(x: "float32[N, C]", g: "float32[N]"):
    s = torch.sigmoid(g)
    b = g * 2.0
    return x * s[:, None] + b[:, None]
# expect:
# exit: 0
# def gate(float32(2, 3) x, float32(2) g) -> (float32(2, 3) t_1) {
#   v(i0, i1) = sigmoid(g(i0)) where i0 in 0:2, i1 in 0:1
#   t_1(i0, i1) = x(i0, i1) * v(i0, 0) + g(i0) * 2.0 where i0 in 0:2, i1 in 0:3
# }
#
# # 0 mutations removed
