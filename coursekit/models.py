"""The models the course builds and the benchmarks draw: an MLP, a small CNN and a nanoGPT-style GPT.

They are written out here, not imported from a model zoo, so that a reader can see every
op that ends up in the autograd graph, and so that the course chapters can reuse them.
Each ``make_*`` function fixes the seed, so the same call always builds the same weights
and the same batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

SEED = 0


class MLP(nn.Module):
    """Three linear layers with ReLUs in between: the smallest model with a real graph."""

    def __init__(self, n_in: int = 784, n_hidden: int = 256, n_out: int = 10):
        super().__init__()
        self.fc1 = nn.Linear(n_in, n_hidden)
        self.fc2 = nn.Linear(n_hidden, n_hidden)
        self.fc3 = nn.Linear(n_hidden, n_out)

    def forward(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Cross-entropy loss of the logits against ``targets`` (class indices)."""
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        return F.cross_entropy(self.fc3(h), targets)


class SmallCNN(nn.Module):
    """Two conv/ReLU/max-pool stages and a linear classifier, for 28×28 one-channel images."""

    def __init__(self, channels: int = 16, n_out: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(channels, 2 * channels, kernel_size=3, padding=1)
        self.fc = nn.Linear(2 * channels * 7 * 7, n_out)

    def forward(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Cross-entropy loss of the logits against ``targets`` (class indices)."""
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)  # 28×28 -> 14×14
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)  # 14×14 -> 7×7
        return F.cross_entropy(self.fc(h.flatten(1)), targets)


@dataclass
class GPTConfig:
    """The shape of a GPT. The defaults are GPT-2 small's width with a small vocabulary."""

    n_layer: int = 12
    n_embd: int = 768
    n_head: int = 12
    block_size: int = 64  # the longest sequence the model accepts
    vocab: int = 1000


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where each position only sees itself and earlier ones.

    The attention is computed by hand (softmax of masked scores) rather than with
    ``F.scaled_dot_product_attention``, so that every step shows up in the graph.
    """

    mask: torch.Tensor  # a buffer (see __init__): declared so that it reads as a Tensor, not as a Module

    def __init__(self, config: GPTConfig):
        super().__init__()
        if config.n_embd % config.n_head:
            raise ValueError(f"n_embd ({config.n_embd}) must be a multiple of n_head ({config.n_head})")
        self.n_head = config.n_head
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)  # query, key, value at once
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        # A buffer, not a parameter: it moves with .to(device) but is never trained.
        mask = torch.tril(torch.ones(config.block_size, config.block_size, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, config.block_size, config.block_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        # (B, T, C) -> (B, n_head, T, head_size): each head attends on its own.
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # heads side by side again
        return self.c_proj(y)


class MLPBlock(nn.Module):
    """The feed-forward half of a block: widen 4×, GELU, project back."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    """One transformer block: attention then MLP, each on a pre-normalised residual stream."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLPBlock(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """A nanoGPT-style decoder: token + position embeddings, ``n_layer`` blocks, LM head."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab, bias=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Cross-entropy loss of predicting ``targets`` (B, T) from tokens ``idx`` (B, T)."""
        B, T = idx.shape
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} is longer than block_size {self.config.block_size}")
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))


def make_mlp(batch: int = 32) -> tuple[MLP, tuple[torch.Tensor, torch.Tensor]]:
    """An MLP and a batch of flattened 28×28 inputs with class targets."""
    torch.manual_seed(SEED)
    model = MLP()
    return model, (torch.randn(batch, 784), torch.randint(0, 10, (batch,)))


def make_cnn(batch: int = 16) -> tuple[SmallCNN, tuple[torch.Tensor, torch.Tensor]]:
    """A SmallCNN and a batch of 28×28 one-channel images with class targets."""
    torch.manual_seed(SEED)
    model = SmallCNN()
    return model, (torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,)))


def make_gpt(config: GPTConfig | None = None, batch: int = 2) -> tuple[GPT, tuple[torch.Tensor, torch.Tensor]]:
    """A GPT and a batch of random token ids, with the next-token targets."""
    config = config or GPTConfig()
    torch.manual_seed(SEED)
    model = GPT(config)
    tokens = torch.randint(0, config.vocab, (batch, config.block_size + 1))
    return model, (tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())
