# test: functionalize --size N=4
# A branch on a tensor's value is a region: the update inside the
# taken side (`x[0] = 0`) makes `x` a result of the branch, which the
# other side yields unchanged.
import torch


def branch(a: "float32[N]"):
    x = a.clone()
    if a.sum() > 0:
        x[0] = 0.0
    return x * 2
# expect:
# exit: 0
# def branch(float32(4) a) -> (float32(4) t_1) {
#   x(i0) = a(i0) where i0 in 0:4
#   r() +=! a(r0) where r0 in 0:4
#   t() = r() > 0.0
#   x_2 = if t() {
#     v() = 0.0
#     x_1(i0) = i0 <= 0 ? v() : x(i0) where i0 in 0:4
#     yield x_1
#   } else {
#     yield x
#   }
#   t_1(i0) = x_2(i0) * 2.0 where i0 in 0:4
# }
#
# # 1 mutation removed:
# #   tests/files/functionalize/branch_on_tensor.py:11:9: x[0] = 0.0 replaced by 1 Assign and 0 Accesses
