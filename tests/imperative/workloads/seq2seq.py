import torch


# One step of a GRU decoder (gate order as in torch.nn.GRU: reset, update,
# new), the gates taken as slices of the fused projections.
def gru_step(x: "float32[B, E]", h: "float32[B, S]", w_ih: "float32[G, E]", w_hh: "float32[G, S]",
             b_ih: "float32[G]", b_hh: "float32[G]"):
    S = h.shape[1]
    gi = x @ w_ih.t() + b_ih
    gh = h @ w_hh.t() + b_hh
    r = torch.sigmoid(gi[:, :S] + gh[:, :S])
    z = torch.sigmoid(gi[:, S:2 * S] + gh[:, S:2 * S])
    n = torch.tanh(gi[:, 2 * S:] + r * gh[:, 2 * S:])
    return (1 - z) * n + z * h


# Greedy decoding from the encoder's final state: feed back the previous
# token's embedding, take the most likely next token, stop when every
# sequence has produced eos or after max_len tokens. A sequence that has
# finished keeps emitting eos; out is padded with eos.
def seq2seq(enc_h: "float32[B, S]", emb: "float32[V, E]", w_ih: "float32[G, E]",
            w_hh: "float32[G, S]", b_ih: "float32[G]", b_hh: "float32[G]",
            w_out: "float32[V, S]", b_out: "float32[V]", sos: int, eos: int, max_len: int):
    B = enc_h.shape[0]
    out = torch.empty(B, max_len, dtype=torch.int64)
    out.fill_(eos)
    tok = torch.empty(B, dtype=torch.int64)
    tok.fill_(sos)
    done = torch.zeros(B, dtype=torch.bool)
    h = enc_h
    t = 0
    while t < max_len and (tok != eos).any():
        x = emb[tok]
        h = gru_step(x, h, w_ih, w_hh, b_ih, b_hh)
        logits = h @ w_out.t() + b_out
        tok = logits.argmax(-1)
        tok.masked_fill_(done, eos)
        done = done | (tok == eos)
        out[:, t] = tok
        t += 1
    return out, h
