# test: functionalize --size T=3 --size I=2 --size S=2 --fuse
# Loop fission: the input projection `x[t] @ w.t()` reads nothing the loop
# carries, so it is computed for every step at once before the loop (one
# product over `t`, with the slice `x[t]` fused into it), and the body
# reads step `t`'s row; the recurrent product `h @ u.t()` reads the
# carried `h` and stays in the loop.
import torch


def rnn(x: "float32[T, I]", h0: "float32[S]", w: "float32[S, I]", u: "float32[S, S]"):
    h = h0
    for t in range(3):
        h = torch.tanh(x[t] @ w.t() + h @ u.t())
    return h
# expect:
# exit: 0
# def rnn(float32(3, 2) x, float32(2) h0, float32(2, 2) w, float32(2, 2) u) -> (float32(2) h_2) {
#   mm(t, i0, i1) +=! x(t, r0) * w(i1, r0) where t in 0:3, i0 in 0:1, i1 in 0:2, r0 in 0:2
#   h_2 = for t in 0:3 carry (float32(2) h = h0) {
#     mm_1(i0, i1) +=! h(r0) * u(i1, r0) where i0 in 0:1, i1 in 0:2, r0 in 0:2
#     h_1(i0) = tanh(mm(t, 0, i0) + mm_1(0, i0)) where i0 in 0:2
#     yield h_1
#   }
# }
#
# # 0 mutations removed
