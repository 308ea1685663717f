# test: functionalize --size B=2 --size C=6 --fuse
# A chain of in-place updates on slices of one tensor, read afterwards at
# slices (YOLO's decoding): fusion reads each result through the chain of
# Assign selects to the update that wrote that slice, deciding every
# condition the reader's range settles (`p[:, 3:]` was written only by
# the exp), so no intermediate tensor is left: one statement per result.
# The copy of the transposed input is a view read through affine
# subscripts; `p[:, 0] += 1.0` writes at index 0, whose select condition
# prints as `i1 <= 0`, the inequality lowering guards either way.
import torch


def decode(x: "float32[C, B]", scale: float):
    p = x.t().contiguous()
    p[:, :2].sigmoid_()
    p[:, 0] += 1.0
    p[:, 2:].exp_()
    p[:, 2:] *= scale
    centre = p[:, :2] * 2.0
    return centre, p[:, 3:] * p[:, 2:3]
# expect:
# exit: 0
# def decode(float32(6, 2) x, float32 scale) -> (float32(2, 2) centre, float32(2, 3) t) {
#   p(i0, i1) = x(i1, i0) where i0 in 0:2, i1 in 0:6
#   centre(i0, i1) = (i1 <= 0 ? sigmoid(p(i0, 0)) + 1.0 : sigmoid(p(i0, i1))) * 2.0 where i0 in 0:2, i1 in 0:2
#   t(i0, i1) = exp(p(i0, i1 + 3)) * scale * (exp(p(i0, 2)) * scale) where i0 in 0:2, i1 in 0:3
# }
#
# # 4 mutations removed:
# #   tests/files/functionalize/update_chain_fused.py:15:5: p[:, :2].sigmoid_() replaced by 1 Assign and 0 Accesses
# #   tests/files/functionalize/update_chain_fused.py:16:5: p[:, 0] += 1.0 replaced by 1 Assign and 0 Accesses
# #   tests/files/functionalize/update_chain_fused.py:17:5: p[:, 2:].exp_() replaced by 1 Assign and 0 Accesses
# #   tests/files/functionalize/update_chain_fused.py:18:5: p[:, 2:] *= scale replaced by 1 Assign and 0 Accesses
