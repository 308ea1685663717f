# test: functionalize --size T=64 --size I=512 --size S=512 --fuse
# Loop fission at a size where lifting everything would not fit: the
# transposed weight `w.t()` does not depend on the loop index, so it moves
# out as it is instead of once per step (64 copies of 512 x 512 would be
# 2^24 elements, over the cap), and only the input projection is lifted
# over `t`: `mm(t, ...)` before the loop, as in `loop_hoist.py`.
import torch


def rnn(x: "float32[T, I]", h0: "float32[S]", w: "float32[S, I]", u: "float32[S, S]"):
    h = h0
    for t in range(64):
        h = torch.tanh(x[t] @ w.t() + h @ u.t())
    return h
# expect:
# exit: 0
# def rnn(float32(64, 512) x, float32(512) h0, float32(512, 512) w, float32(512, 512) u) -> (float32(512) h_2) {
#   mm(t, i0, i1) +=! x(t, r0) * w(i1, r0) where t in 0:64, i0 in 0:1, i1 in 0:512, r0 in 0:512
#   h_2 = for t in 0:64 carry (float32(512) h = h0) {
#     mm_1(i0, i1) +=! h(r0) * u(i1, r0) where i0 in 0:1, i1 in 0:512, r0 in 0:512
#     h_1(i0) = tanh(mm(t, 0, i0) + mm_1(0, i0)) where i0 in 0:512
#     yield h_1
#   }
# }
#
# # 0 mutations removed
