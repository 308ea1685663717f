# test: functionalize --size N=3 --size M=4 --input n=3
# TensorSSA's Figure 4: a row updated in place inside a loop. `b` is not
# rebound in the body, so only block propagation makes it loop-carried:
# the body takes it as a parameter (`b_1`), assigns row `i`, and yields
# the new version, which the loop returns. Row `i` of the carried value
# is read (Access), incremented, and assigned back (Assign) - the paper's
# Figure 4 (e).
import torch


def fig4(b0: "float32[N, M]", n: int):
    b = b0.clone()
    for i in range(n):
        b[i] = b[i] + 1
    return b
# expect:
# exit: 0
# def fig4(float32(3, 4) b0) -> (float32(3, 4) b_3) {
#   b(i0, i1) = b0(i0, i1) where i0 in 0:3, i1 in 0:4
#   b_3 = for i in 0:3 carry (float32(3, 4) b_1 = b) {
#     v(i0) = b_1(i, i0) where i0 in 0:4
#     t(i0) = v(i0) + 1.0 where i0 in 0:4
#     b_2(i0, i1) = i0 == i ? t(i1) : b_1(i0, i1) where i0 in 0:3, i1 in 0:4
#     yield b_2
#   }
# }
#
# # 1 mutation removed:
# #   tests/files/functionalize/fig4_loop.py:14:9: b[i] = b[i] + 1 replaced by 1 Assign and 0 Accesses
