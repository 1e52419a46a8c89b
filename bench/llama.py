"""A Llama-style decoder built from its config alone, to draw models too big to run.

Llama 3's architecture as its paper describes it (RMSNorm before attention and before the
SwiGLU feed-forward, rotary position embeddings, grouped-query attention, no biases),
written out so that every op shows in vizlib's graph, and no weights downloaded: built
under ``torch.device("meta")`` it has shapes and dtypes and no memory, so an 8-billion
parameter model costs nothing to make. ``LlamaConfig()`` is Llama-3-8B's shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class LlamaConfig:
    """The shape of a Llama-style model; the defaults are Llama-3-8B's (8.03 billion parameters)."""

    vocab: int = 128256
    dim: int = 4096
    hidden: int = 14336  # the SwiGLU feed-forward's inner width
    n_layer: int = 32
    n_head: int = 32
    n_kv_head: int = 8  # grouped-query attention: each key/value head serves 4 query heads
    rope_theta: float = 500000.0
    eps: float = 1e-5


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight, computed in float32."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rotate(x: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotary position embedding of ``x`` (batch, heads, sequence, head_dim)."""
    t, d = x.shape[-2], x.shape[-1]
    freqs = theta ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    angles = torch.outer(torch.arange(t, device=x.device, dtype=torch.float32), freqs)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.c, self.head_dim = c, c.dim // c.n_head
        self.wq = nn.Linear(c.dim, c.n_head * self.head_dim, bias=False)
        self.wk = nn.Linear(c.dim, c.n_kv_head * self.head_dim, bias=False)
        self.wv = nn.Linear(c.dim, c.n_kv_head * self.head_dim, bias=False)
        self.wo = nn.Linear(c.n_head * self.head_dim, c.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.c.n_head, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, self.c.n_kv_head, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, self.c.n_kv_head, self.head_dim).transpose(1, 2)
        q, k = rotate(q, self.c.rope_theta), rotate(k, self.c.rope_theta)
        groups = self.c.n_head // self.c.n_kv_head
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x)."""

    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.w1 = nn.Linear(c.dim, c.hidden, bias=False)
        self.w3 = nn.Linear(c.dim, c.hidden, bias=False)
        self.w2 = nn.Linear(c.hidden, c.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.attention_norm, self.attention = RMSNorm(c.dim, c.eps), Attention(c)
        self.ffn_norm, self.feed_forward = RMSNorm(c.dim, c.eps), FeedForward(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x))
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    """Token ids in, next-token cross-entropy loss out."""

    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.tok_embeddings = nn.Embedding(c.vocab, c.dim)
        self.layers = nn.ModuleList(Block(c) for _ in range(c.n_layer))
        self.norm = RMSNorm(c.dim, c.eps)
        self.output = nn.Linear(c.dim, c.vocab, bias=False)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x)
        logits = self.output(self.norm(x))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def meta_llama(config: LlamaConfig | None = None, batch: int = 1, seq: int = 16) -> tuple[Llama, tuple]:
    """A Llama built on the meta device (no memory), and a batch of token ids there."""
    config = config or LlamaConfig()
    with torch.device("meta"):
        model = Llama(config)
        tokens = torch.randint(0, config.vocab, (batch, seq + 1))
    return model, (tokens[:, :-1], tokens[:, 1:])
