import torch


# YOLOv3 inference decoding for one feature level (no NMS). The head's raw
# output pred holds, for each of A anchors, 5 + C channels per cell:
# tx, ty, tw, th, objectness, C class logits.
def yolov3(pred: "float32[B, P, H, W]", anchors: "float32[A, 2]", stride: float):
    B = pred.shape[0]
    H = pred.shape[2]
    W = pred.shape[3]
    A = anchors.shape[0]
    # [B, A*(5+C), H, W] -> [B, A, H, W, 5+C]
    p = pred.view(B, A, -1, H, W).permute(0, 1, 3, 4, 2).contiguous()
    C = p.shape[4] - 5

    # cell offsets: grid_x[i, j] = j, grid_y[i, j] = i
    grid_x = torch.arange(W, dtype=torch.float32).view(1, W).expand(H, W)
    grid_y = torch.arange(H, dtype=torch.float32).view(H, 1).expand(H, W)

    # centres: (sigmoid(t_xy) + cell) * stride, in place on the xy channels
    p[..., :2].sigmoid_()
    p[..., 0] += grid_x
    p[..., 1] += grid_y
    p[..., :2] *= stride
    # sizes: exp(t_wh) * anchor (anchors are in input pixels)
    p[..., 2:4].exp_()
    p[..., 2:4] *= anchors.view(1, A, 1, 1, 2)
    # objectness and class probabilities
    p[..., 4:].sigmoid_()

    # centre-size -> corners
    boxes = torch.empty(B, A, H, W, 4)
    boxes[..., :2] = p[..., :2] - p[..., 2:4] / 2
    boxes[..., 2:] = p[..., :2] + p[..., 2:4] / 2

    scores = p[..., 5:] * p[..., 4:5]
    objectness = p[..., 4].reshape(B, -1)
    return boxes.view(B, -1, 4), scores.reshape(B, -1, C), objectness
