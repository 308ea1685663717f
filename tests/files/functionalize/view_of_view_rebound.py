# test: functionalize --size N=4 --size M=3
# A view of a view (`c` of `r` of `a`), written after `a` is rebound: the
# write reaches the storage `a` had when the views were taken, which is
# still `b`'s. The conversion follows values, not names, so the fill
# lands in `b` (`a_2`: row 1, columns 1 and 2 become 7) and not in the
# rebound `a` (`a_1`: twice the original), as in PyTorch eager.
import torch


def f(x: "float32[N, M]"):
    a = x.clone()
    b = a
    r = a[1]
    c = r[1:]
    a = a * 2.0
    c.fill_(7.0)
    return a, b
# expect:
# exit: 0
# def f(float32(4, 3) x) -> (float32(4, 3) a_1, float32(4, 3) a_2) {
#   a(i0, i1) = x(i0, i1) where i0 in 0:4, i1 in 0:3
#   r(i0) = a(1, i0) where i0 in 0:3
#   a_1(i0, i1) = a(i0, i1) * 2.0 where i0 in 0:4, i1 in 0:3
#   c(i0) = 7.0 where i0 in 0:2
#   r_1(i0) = i0 >= 1 ? c(i0 - 1) : r(i0) where i0 in 0:3
#   a_2(i0, i1) = i0 == 1 ? r_1(i1) : a(i0, i1) where i0 in 0:4, i1 in 0:3
# }
#
# # 1 mutation removed:
# #   tests/files/functionalize/view_of_view_rebound.py:16:5: c.fill_(7.0) replaced by 2 Assigns and 0 Accesses
