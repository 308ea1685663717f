# test: functionalize --size N=3 --size M=4 --input n=3 --fuse
# Vertical fusion after conversion (TensorSSA §4.2.1): Figure 4's Access
# of row `i` is substituted into the addition (`t`), two statements in
# the loop body instead of three. The addition stays apart from the
# Assign: it reads row `i` at a run-time index, which lowering computes
# unconditionally but does not prove in bounds under the select's branch.
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
#     t(i0) = b_1(i, i0) + 1.0 where i0 in 0:4
#     b_2(i0, i1) = i0 == i ? t(i1) : b_1(i0, i1) where i0 in 0:3, i1 in 0:4
#     yield b_2
#   }
# }
#
# # 1 mutation removed:
# #   tests/files/functionalize/fig4_fused.py:13:9: b[i] = b[i] + 1 replaced by 1 Assign and 2 Accesses
