# test: functionalize --size N=4
# Pass-down updates only the views live after a mutation. `v` is made
# before the loop and read in it before `x` is mutated, so the next
# iteration reads it after the mutation: it must be read again from the
# new `x` (`v_2`) and carried, or `acc` would sum the first `x[0:2]`
# three times instead of x[0:2] * (1 + 2 + 4).
import torch


def live(a: "float32[N]"):
    x = a.clone()
    v = x[0:2]
    acc = torch.zeros(2)
    for i in range(3):
        acc = acc + v
        x.mul_(2.0)
    return acc, x
# expect:
# exit: 0
# def live(float32(4) a) -> (float32(2) acc_3, float32(4) x_3) {
#   x(i0) = a(i0) where i0 in 0:4
#   v(i0) = x(i0) where i0 in 0:2
#   acc(i0) = 0.0 where i0 in 0:2
#   (acc_3, x_3, v_3) = for i in 0:3 carry (float32(2) acc_1 = acc, float32(4) x_1 = x, float32(2) v_1 = v) {
#     acc_2(i0) = acc_1(i0) + v_1(i0) where i0 in 0:2
#     x_2(i0) = x_1(i0) * 2.0 where i0 in 0:4
#     v_2(i0) = x_2(i0) where i0 in 0:2
#     yield (acc_2, x_2, v_2)
#   }
# }
#
# # 1 mutation removed:
# #   tests/files/functionalize/view_live_in_loop.py:16:9: x.mul_(2.0) replaced by 0 Assigns and 1 Access
