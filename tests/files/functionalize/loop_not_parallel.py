# test: functionalize --size N=2 --fuse
# Each iteration writes its own slice but reads another (`2 - c`), which
# iteration 0 has written by the time iteration 2 reads it: the
# iterations are not independent, and the loop stays a loop.
import torch


def mirror(x: "float32[N, 3]"):
    y = x.clone()
    for c in range(3):
        y[:, c] += y[:, 2 - c]
    return y
# expect:
# exit: 0
# def mirror(float32(2, 3) x) -> (float32(2, 3) y_3) {
#   y(i0, i1) = x(i0, i1) where i0 in 0:2, i1 in 0:3
#   y_3 = for c in 0:3 carry (float32(2, 3) y_1 = y) {
#     v(i0) = y_1(i0, 2 - c) where i0 in 0:2
#     v_1(i0) = y_1(i0, c) where i0 in 0:2
#     y_2(i0, i1) = i1 == c ? v_1(i0) + v(i0) : y_1(i0, i1) where i0 in 0:2, i1 in 0:3
#     yield y_2
#   }
# }
#
# # 1 mutation removed:
# #   tests/files/functionalize/loop_not_parallel.py:11:9: y[:, c] += y[:, 2 - c] replaced by 1 Assign and 0 Accesses
