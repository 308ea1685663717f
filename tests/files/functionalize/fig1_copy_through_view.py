# test: functionalize --size N=3 --size M=4
# TensorSSA's Figure 1: `b` is a view of `a` (row 0); `b.copy_(c)` writes
# through it, so `a` changes too. Conversion: pass-up assigns `c` into row
# 0 of `a` (one Assign), pass-down reads `b` back from the new `a` (one
# Access); both results see the write.
import torch


def fig1(a: "float32[N, M]", c: "float32[M]"):
    a = a.clone()
    b = a[0]
    b.copy_(c)
    return a, b
# expect:
# exit: 0
# def fig1(float32(3, 4) a, float32(4) c) -> (float32(3, 4) a_2, float32(4) b) {
#   a_1(i0, i1) = a(i0, i1) where i0 in 0:3, i1 in 0:4
#   a_2(i0, i1) = i0 <= 0 ? c(i1) : a_1(i0, i1) where i0 in 0:3, i1 in 0:4
#   b(i0) = a_2(0, i0) where i0 in 0:4
# }
#
# # 1 mutation removed:
# #   tests/files/functionalize/fig1_copy_through_view.py:12:5: b.copy_(c) replaced by 1 Assign and 1 Access
