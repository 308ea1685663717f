# test: functionalize --size B=2 --size H=3 --fuse
# Horizontal parallelization: each iteration updates its own channel
# (`x[:, c]`) and reads only that channel, of the carried tensor and of
# the chain of selects, so the loop becomes statements over one more
# iterator; the result reads iteration `i1`'s yield at channel `i1`, where
# every select folds, and fusion leaves one statement. The channel's mean
# is a reduction per iteration: lifted, it is one reduction per channel.
import torch


def centre(img: "float32[B, 3, H]", scale: "float32[3]"):
    x = img.clone()
    for c in range(3):
        x[:, c] -= x[:, c].mean()
        x[:, c].mul_(scale[c])
    return x
# expect:
# exit: 0
# def centre(float32(2, 3, 3) img, float32(3) scale) -> (float32(2, 3, 3) x_4) {
#   r_sum(c) +=! img(r0, c, r1) where c in 0:3, r0 in 0:2, r1 in 0:3
#   x_4(i0, i1, i2) = (img(i0, i1, i2) - r_sum(i1) / 6.0) * scale(i1) where i0 in 0:2, i1 in 0:3, i2 in 0:3
# }
#
# # 2 mutations removed:
# #   tests/files/functionalize/loop_parallel.py:14:9: x[:, c] -= x[:, c].mean() replaced by 1 Assign and 0 Accesses
# #   tests/files/functionalize/loop_parallel.py:15:9: x[:, c].mul_(scale[c]) replaced by 1 Assign and 0 Accesses
