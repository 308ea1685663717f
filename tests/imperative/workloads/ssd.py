import torch
import torch.nn.functional as F


# SSD inference decoding (no NMS): centre-size offsets against the priors
# (centre-size, relative to the image) with the variances, then corner form,
# clipped to the image and scaled to pixels; class scores by softmax, class 0
# being the background.
def ssd(loc: "float32[B, N, 4]", conf: "float32[B, N, C]", priors: "float32[N, 4]",
        var_xy: float, var_wh: float, score_thresh: float, img_w: float, img_h: float):
    boxes = torch.empty_like(loc)
    boxes[..., :2] = priors[:, :2] + loc[..., :2] * var_xy * priors[:, 2:]
    boxes[..., 2:] = priors[:, 2:] * torch.exp(loc[..., 2:] * var_wh)
    # (cx, cy, w, h) -> (x1, y1, x2, y2)
    boxes[..., :2] -= boxes[..., 2:] / 2
    boxes[..., 2:] += boxes[..., :2]
    boxes.clamp_(min=0.0, max=1.0)
    boxes[..., 0::2] *= img_w
    boxes[..., 1::2] *= img_h

    scores = F.softmax(conf, dim=-1)
    fg = scores[..., 1:]
    fg.masked_fill_(fg < score_thresh, 0.0)
    best_score = fg.amax(-1)
    best_label = fg.argmax(-1) + 1
    return boxes, scores, best_score, best_label
