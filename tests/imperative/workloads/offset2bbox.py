import torch


# Box regression offsets (dx, dy, dw, dh) per class, against proposals
# (x1, y1, x2, y2), to boxes, as in two-stage detectors' test-time bbox head:
# deltas are [N, 4*C] with class c's offsets in columns 4c..4c+3.
def offset2bbox(rois: "float32[N, 4]", deltas: "float32[N, K]", means: "float32[4]",
                stds: "float32[4]", max_ratio: float, img_h: float, img_w: float):
    d = deltas.clone()
    for j in range(4):
        d[:, j::4].mul_(stds[j])
        d[:, j::4].add_(means[j])
    d[:, 2::4].clamp_(min=-max_ratio, max=max_ratio)
    d[:, 3::4].clamp_(min=-max_ratio, max=max_ratio)

    px = ((rois[:, 0] + rois[:, 2]) * 0.5)[:, None]
    py = ((rois[:, 1] + rois[:, 3]) * 0.5)[:, None]
    pw = (rois[:, 2] - rois[:, 0])[:, None]
    ph = (rois[:, 3] - rois[:, 1])[:, None]
    gx = px + pw * d[:, 0::4]
    gy = py + ph * d[:, 1::4]
    gw = pw * d[:, 2::4].exp()
    gh = ph * d[:, 3::4].exp()

    boxes = torch.empty_like(deltas)
    boxes[:, 0::4] = gx - gw * 0.5
    boxes[:, 1::4] = gy - gh * 0.5
    boxes[:, 2::4] = gx + gw * 0.5
    boxes[:, 3::4] = gy + gh * 0.5
    boxes[:, 0::2].clamp_(min=0.0, max=img_w)
    boxes[:, 1::2].clamp_(min=0.0, max=img_h)
    return boxes
