# test: functionalize --size N=2 --size K=3 --size M=4
# Pure dataflow: no view is written through and nothing is mutated, so
# conversion removes nothing; views become Accesses (gathers), and each
# operation one comprehension (softmax four: max, exp, sum, divide).
import torch


def dataflow(x: "float32[N, K]", w: "float32[K, M]", b: "float32[M]"):
    y = torch.relu(x @ w + b)
    z = y[:, 1:].sum(-1)
    return torch.softmax(y, dim=1), z
# expect:
# exit: 0
# def dataflow(float32(2, 3) x, float32(3, 4) w, float32(4) b) -> (float32(2, 4) p, float32(2) z) {
#   mm(i0, i1) +=! x(i0, r0) * w(r0, i1) where i0 in 0:2, i1 in 0:4, r0 in 0:3
#   t(i0, i1) = mm(i0, i1) + b(i1) where i0 in 0:2, i1 in 0:4
#   y(i0, i1) = max(t(i0, i1), 0.0) where i0 in 0:2, i1 in 0:4
#   v(i0, i1) = y(i0, i1 + 1) where i0 in 0:2, i1 in 0:3
#   z(i0) +=! v(i0, r0) where i0 in 0:2, r0 in 0:3
#   p_max(i0, i1) max=! y(i0, r0) where i0 in 0:2, i1 in 0:1, r0 in 0:4
#   p_exp(i0, i1) = exp(y(i0, i1) - p_max(i0, 0)) where i0 in 0:2, i1 in 0:4
#   p_sum(i0, i1) +=! p_exp(i0, r0) where i0 in 0:2, i1 in 0:1, r0 in 0:4
#   p(i0, i1) = p_exp(i0, i1) / p_sum(i0, 0) where i0 in 0:2, i1 in 0:4
# }
#
# # 0 mutations removed
