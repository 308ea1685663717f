import torch


# YOLACT mask assembly: masks are the prototypes combined by each detection's
# coefficients, then cropped to the detection's box (on the prototype grid).


# Relative (x1, y1, x2, y2) boxes to prototype pixels, each side ordered and
# padded by `padding` pixels, kept inside the grid.
def sanitize_boxes(boxes: "float32[N, 4]", w: int, h: int, padding: int):
    b = boxes.clone()
    b[:, 0::2] *= w
    b[:, 1::2] *= h
    lo = torch.minimum(b[:, :2], b[:, 2:])
    hi = torch.maximum(b[:, :2], b[:, 2:])
    b[:, :2] = (lo - padding).clamp(min=0)
    b[:, 2:] = hi + padding
    b[:, 2].clamp_(max=w)
    b[:, 3].clamp_(max=h)
    return b


def yolact(protos: "float32[H, W, K]", coeffs: "float32[N, K]", boxes: "float32[N, 4]",
           padding: int):
    H = protos.shape[0]
    W = protos.shape[1]
    N = coeffs.shape[0]
    masks = torch.sigmoid(protos @ coeffs.t())  # [H, W, N]

    b = sanitize_boxes(boxes, W, H, padding)
    cols = torch.arange(W, dtype=torch.float32).view(1, W, 1).expand(H, W, N)
    rows = torch.arange(H, dtype=torch.float32).view(H, 1, 1).expand(H, W, N)
    inside = (cols >= b[:, 0]) & (cols < b[:, 2]) & (rows >= b[:, 1]) & (rows < b[:, 3])
    masks.masked_fill_(~inside, 0.0)

    masks = masks.permute(2, 0, 1).contiguous()  # [N, H, W]
    area = (masks > 0.5).float().sum((1, 2))
    return masks, b, area
