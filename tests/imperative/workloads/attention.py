import torch


# Incremental multi-head self-attention decoding: at each step the new
# position's key and value are written into the KV caches in place, and its
# query attends over the cached positions 0..t. scale is 1/sqrt(E/n_heads).
def attention(x: "float32[B, T, E]", w_q: "float32[E, E]", w_k: "float32[E, E]",
              w_v: "float32[E, E]", w_o: "float32[E, E]", n_heads: int, scale: float):
    B = x.shape[0]
    T = x.shape[1]
    E = x.shape[2]
    D = E // n_heads
    k_cache = torch.zeros(B, n_heads, T, D)
    v_cache = torch.zeros(B, n_heads, T, D)
    out = torch.empty(B, T, E)
    for t in range(T):
        h = x[:, t]  # [B, E]
        q = (h @ w_q.t()).view(B, n_heads, 1, D)
        k = (h @ w_k.t()).view(B, n_heads, D)
        v = (h @ w_v.t()).view(B, n_heads, D)
        k_cache[:, :, t, :] = k
        v_cache[:, :, t, :] = v
        scores = q @ k_cache[:, :, :t + 1, :].transpose(2, 3) * scale  # [B, n_heads, 1, t+1]
        probs = torch.softmax(scores, -1)
        ctx = probs @ v_cache[:, :, :t + 1, :]  # [B, n_heads, 1, D]
        out[:, t] = ctx.view(B, E) @ w_o.t()
    return out, k_cache, v_cache
