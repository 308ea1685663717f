import torch


# The recurrent cell found by neural architecture search (Zoph & Le, 2017):
# eight branches over the input and recurrent projections, combined in a
# tree of elementwise ops. xi and hh are [B, 8S] projections.
def nas_cell(xi: "float32[B, G]", hh: "float32[B, G]", c: "float32[B, S]"):
    S = c.shape[1]
    l0 = torch.sigmoid(xi[:, 0:S] + hh[:, 0:S])
    l1 = torch.relu(xi[:, S:2 * S] + hh[:, S:2 * S])
    l2 = torch.sigmoid(xi[:, 2 * S:3 * S] + hh[:, 2 * S:3 * S])
    l3 = torch.relu(xi[:, 3 * S:4 * S] * hh[:, 3 * S:4 * S])
    l4 = torch.tanh(xi[:, 4 * S:5 * S] + hh[:, 4 * S:5 * S])
    l5 = torch.sigmoid(xi[:, 5 * S:6 * S] + hh[:, 5 * S:6 * S])
    l6 = torch.tanh(xi[:, 6 * S:7 * S] + hh[:, 6 * S:7 * S])
    l7 = torch.sigmoid(xi[:, 7 * S:8 * S] + hh[:, 7 * S:8 * S])
    m0 = torch.tanh(l0 * l1)
    m1 = torch.tanh(l2 + l3)
    m2 = torch.tanh(l4 * l5)
    m3 = torch.sigmoid(l6 + l7)
    m0 = torch.tanh(m0 + c)
    new_c = m0 * m1
    new_h = torch.tanh(new_c * torch.tanh(m2 + m3))
    return new_h, new_c


# The NAS cell over a sequence: the input projection for all steps at once,
# then one step per time step, each step's hidden state written into out.
def nasrnn(x: "float32[T, B, I]", h0: "float32[B, S]", c0: "float32[B, S]",
           w_ih: "float32[G, I]", w_hh: "float32[G, S]"):
    T = x.shape[0]
    B = x.shape[1]
    S = h0.shape[1]
    xi = x @ w_ih.t()  # [T, B, 8S]
    out = torch.zeros(T, B, S)
    h = h0
    c = c0
    for t in range(T):
        h, c = nas_cell(xi[t], h @ w_hh.t(), c)
        out[t] = h
    return out, c
