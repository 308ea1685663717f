# test: functionalize --size N=4
# A `while` on a tensor-valued condition, with a Python int carried
# beside the tensor: the condition becomes a carried 0-d bool tensor
# (`c`) recomputed at the end of each iteration, `t` a carried 0-d int64
# tensor, and the write `out[t] = ...` an Assign at a position read from
# a tensor.
import torch


def count_up(a: "float32[N]", limit: float):
    out = torch.zeros(8)
    s = a.sum()
    t = 0
    while s < limit and t < 8:
        out[t] = s
        s = s * 2.0
        t += 1
    return out
# expect:
# exit: 0
# def count_up(float32(4) a, float32 limit) -> (float32(8) out_3) {
#   out(i0) = 0.0 where i0 in 0:8
#   s() +=! a(r0) where r0 in 0:4
#   t() = s() < limit
#   s_1() = t() && true
#   t_1() = int64(0)
#   (c_out, s_6, t_4, out_3) = for k while c() carry (bool() c = s_1, float32() s_2 = s, int64() t_2 = t_1, float32(8) out_1 = out) {
#     out_2(i0) = i0 == t_2() ? s_2() : out_1(i0) where i0 in 0:8
#     s_3() = s_2() * 2.0
#     t_3() = s_3() < limit
#     s_4() = t_3() && t_2() + 1 < 8
#     s_5() = t_2() + 1
#     yield (s_4, s_3, s_5, out_2)
#   }
# }
#
# # 1 mutation removed:
# #   tests/files/functionalize/while_counter.py:15:9: out[t] = s replaced by 1 Assign and 0 Accesses
