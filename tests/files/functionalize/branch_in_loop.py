# test: functionalize --size N=4 --size M=3
# A branch inside a loop, both on a value computed in the loop: each
# iteration writes row `i` on one side (a positive row sum doubles it)
# and leaves it on the other. Block propagation carries `x` out of the
# branch, then out of the loop.
import torch


def branch_in_loop(a: "float32[N, M]"):
    x = a.clone()
    for i in range(4):
        if x[i].sum() > 0:
            x[i] *= 2.0
    return x
# expect:
# exit: 0
# def branch_in_loop(float32(4, 3) a) -> (float32(4, 3) x_4) {
#   x(i0, i1) = a(i0, i1) where i0 in 0:4, i1 in 0:3
#   x_4 = for i in 0:4 carry (float32(4, 3) x_1 = x) {
#     v(i0) = x_1(i, i0) where i0 in 0:3
#     r() +=! v(r0) where r0 in 0:3
#     t() = r() > 0.0
#     x_3 = if t() {
#       v_1(i0) = x_1(i, i0) where i0 in 0:3
#       v_2(i0) = v_1(i0) * 2.0 where i0 in 0:3
#       x_2(i0, i1) = i0 == i ? v_2(i1) : x_1(i0, i1) where i0 in 0:4, i1 in 0:3
#       yield x_2
#     } else {
#       yield x_1
#     }
#     yield x_3
#   }
# }
#
# # 1 mutation removed:
# #   tests/files/functionalize/branch_in_loop.py:13:13: x[i] *= 2.0 replaced by 1 Assign and 0 Accesses
