# test: functionalize --size B=2 --size C=3 --size H=4
# A write through a chain of views (permute, then a strided slice, then a
# select): pass-up assigns back along the chain, one Assign per view, to
# the owner `x`; pass-down reads again, from the new `x`, the views that
# existed before the write and are live after it: only the sibling `q`,
# which is returned (`p`, `s` and `r` are not used again).
import torch


def chain(a: "float32[B, C, H]", v: "float32[B]"):
    x = a.clone()
    p = x.permute(2, 0, 1)
    q = x[:, 0]
    s = p[1::2]
    r = s[:, :, 2]
    r[0] = v
    return x, q
# expect:
# exit: 0
# def chain(float32(2, 3, 4) a, float32(2) v) -> (float32(2, 3, 4) x_1, float32(2, 4) q) {
#   x(i0, i1, i2) = a(i0, i1, i2) where i0 in 0:2, i1 in 0:3, i2 in 0:4
#   p(i0, i1, i2) = x(i1, i2, i0) where i0 in 0:4, i1 in 0:2, i2 in 0:3
#   s(i0, i1, i2) = p(i0 * 2 + 1, i1, i2) where i0 in 0:2, i1 in 0:2, i2 in 0:3
#   r(i0, i1) = s(i0, i1, 2) where i0 in 0:2, i1 in 0:2
#   r_1(i0, i1) = i0 <= 0 ? v(i1) : r(i0, i1) where i0 in 0:2, i1 in 0:2
#   s_1(i0, i1, i2) = i2 >= 2 ? r_1(i0, i1) : s(i0, i1, i2) where i0 in 0:2, i1 in 0:2, i2 in 0:3
#   p_1(i0, i1, i2) = i0 >= 1 && (i0 - 1) % 2 == 0 ? s_1((i0 - 1) / 2, i1, i2) : p(i0, i1, i2) where i0 in 0:4, i1 in 0:2, i2 in 0:3
#   x_1(i0, i1, i2) = p_1(i2, i0, i1) where i0 in 0:2, i1 in 0:3, i2 in 0:4
#   q(i0, i1) = x_1(i0, 0, i1) where i0 in 0:2, i1 in 0:4
# }
#
# # 1 mutation removed:
# #   tests/files/functionalize/view_chain.py:16:5: r[0] = v replaced by 4 Assigns and 1 Access
