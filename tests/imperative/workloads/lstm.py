import torch


# A one-layer LSTM over a sequence, one cell step per time step. Gate order
# as in torch.nn.LSTM: input, forget, cell, output; the activations are
# applied in place on the slices of the fused gate pre-activations.
def lstm(x: "float32[T, B, I]", h0: "float32[B, S]", c0: "float32[B, S]",
         w_ih: "float32[G, I]", w_hh: "float32[G, S]", b_ih: "float32[G]", b_hh: "float32[G]"):
    T = x.shape[0]
    B = x.shape[1]
    S = h0.shape[1]
    out = torch.empty(T, B, S)
    h = h0
    c = c0.clone()
    for t in range(T):
        gates = x[t] @ w_ih.t() + h @ w_hh.t()
        gates += b_ih + b_hh
        gates[:, :2 * S].sigmoid_()
        gates[:, 2 * S:3 * S].tanh_()
        gates[:, 3 * S:].sigmoid_()
        i = gates[:, :S]
        f = gates[:, S:2 * S]
        g = gates[:, 2 * S:3 * S]
        o = gates[:, 3 * S:]
        c.mul_(f)
        c += i * g
        h = o * torch.tanh(c)
        out[t] = h
    return out, h, c
