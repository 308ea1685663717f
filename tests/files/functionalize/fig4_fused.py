# test: functionalize --size N=3 --size M=4 --input n=3 --fuse
# Figure 4 optimized (TensorSSA §4.2): iteration `i` updates row `i` and
# reads only row `i`, so the iterations are independent and horizontal
# parallelization makes the loop statements over one more iterator; the
# result reads iteration `i0`'s yield at row `i0`, where the select folds,
# and vertical fusion leaves one statement.
import torch


def fig4(b0: "float32[N, M]", n: int):
    b = b0.clone()
    for i in range(n):
        b[i] = b[i] + 1
    return b
# expect:
# exit: 0
# def fig4(float32(3, 4) b0) -> (float32(3, 4) b_3) {
#   b_3(i0, i1) = b0(i0, i1) + 1.0 where i0 in 0:3, i1 in 0:4
# }
#
# # 1 mutation removed:
# #   tests/files/functionalize/fig4_fused.py:13:9: b[i] = b[i] + 1 replaced by 1 Assign and 0 Accesses
