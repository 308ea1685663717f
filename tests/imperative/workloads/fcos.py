import torch


# FCOS inference decoding for one feature level (no NMS): each location's
# point in the image, its four predicted distances to the box sides, scores
# as sqrt(class probability * centerness) as in FCOS's test-time scoring.
def fcos(cls_score: "float32[B, C, H, W]", bbox_pred: "float32[B, 4, H, W]",
         centerness: "float32[B, 1, H, W]", stride: int, scale: float, norm_on_bbox: bool,
         img_h: float, img_w: float):
    B = cls_score.shape[0]
    C = cls_score.shape[1]
    H = cls_score.shape[2]
    W = cls_score.shape[3]

    # the locations: centres of the stride x stride cells, row-major
    xs = torch.arange(W, dtype=torch.float32) * stride + stride // 2
    ys = torch.arange(H, dtype=torch.float32) * stride + stride // 2
    x = xs.view(1, W).expand(H, W).reshape(-1)
    y = ys.view(H, 1).expand(H, W).reshape(-1)

    dist = bbox_pred.permute(0, 2, 3, 1).reshape(B, -1, 4) * scale
    if norm_on_bbox:
        dist = dist.relu() * stride
    else:
        dist = dist.exp()

    boxes = torch.stack([x - dist[..., 0], y - dist[..., 1], x + dist[..., 2], y + dist[..., 3]], -1)
    boxes[..., 0::2].clamp_(min=0.0, max=img_w)
    boxes[..., 1::2].clamp_(min=0.0, max=img_h)

    scores = cls_score.permute(0, 2, 3, 1).reshape(B, -1, C).sigmoid()
    ctr = centerness.view(B, -1).sigmoid()
    scores.mul_(ctr[..., None])
    scores = scores.sqrt()
    return boxes, scores
