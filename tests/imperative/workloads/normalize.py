import torch


# Detector input preprocessing: a BGR image batch (values in [0, 255], or in
# [0, 1] and then scaled up) to RGB, normalized per channel with the RGB
# mean and std, zero-padded at the bottom and right to a multiple of
# size_divisor.
def normalize(img: "float32[B, 3, H, W]", mean: "float32[3]", std: "float32[3]", to_rgb: bool,
              size_divisor: int):
    B = img.shape[0]
    H = img.shape[2]
    W = img.shape[3]
    x = img.clone()
    if to_rgb:
        x[:, 0] = img[:, 2]
        x[:, 2] = img[:, 0]
    if (x <= 1.0).all():
        x *= 255.0
    for c in range(3):
        x[:, c].sub_(mean[c])
        x[:, c].div_(std[c])
    Hp = (H + size_divisor - 1) // size_divisor * size_divisor
    Wp = (W + size_divisor - 1) // size_divisor * size_divisor
    out = torch.zeros(B, 3, Hp, Wp)
    out[:, :, :H, :W] = x
    return out
