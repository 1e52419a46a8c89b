"""The course's models build and train on tiny configs.

The chapters and the benchmarks mean something only if the models are the models they
claim to be: a GPT whose attention is causal, whose loss reaches every parameter, built
the same way every time.
"""

from __future__ import annotations

import math

import pytest
import torch

from coursekit.models import GPT, CausalSelfAttention, GPTConfig, make_cnn, make_gpt, make_mlp

TINY = GPTConfig(n_layer=2, n_embd=32, n_head=4, block_size=8, vocab=50)


def _assert_trains(model: torch.nn.Module, batch: tuple) -> torch.Tensor:
    loss = model(*batch)
    assert loss.shape == () and math.isfinite(loss.item())
    grads = torch.autograd.grad(loss, list(model.parameters()))
    names = [n for n, _ in model.named_parameters()]
    missing = [n for n, g in zip(names, grads, strict=True) if not g.abs().sum() > 0]
    assert not missing, f"no gradient reaches {missing}"
    return loss


def test_mlp_and_cnn_give_a_loss_that_reaches_every_parameter():
    for make in (make_mlp, make_cnn):
        model, batch = make(batch=4)
        loss = _assert_trains(model, batch)
        # Cross-entropy over 10 classes of an untrained model is near ln(10).
        assert 1.0 < loss.item() < 5.0


def test_gpt_has_the_named_structure():
    model, _ = make_gpt(TINY)
    assert len(model.blocks) == 2
    block = model.blocks[0]
    assert isinstance(block.attn, CausalSelfAttention)
    assert block.attn.c_attn.out_features == 3 * 32
    assert block.mlp.c_fc.out_features == 4 * 32
    assert "blocks.1.attn.mask" in dict(model.named_buffers())
    assert "blocks.1.attn.mask" not in dict(model.named_parameters())


def test_gpt_loss_reaches_every_parameter():
    model, batch = make_gpt(TINY, batch=3)
    assert batch[0].shape == batch[1].shape == (3, TINY.block_size)
    loss = _assert_trains(model, batch)
    assert 2.0 < loss.item() < 10.0  # ln(50) ≈ 3.9 for an untrained model


def test_gpt_targets_are_the_next_tokens():
    _, (idx, targets) = make_gpt(TINY)
    assert torch.equal(idx[:, 1:], targets[:, :-1])


def test_attention_is_causal():
    """Changing the last token must not change what attention gives earlier positions."""
    torch.manual_seed(1)
    attn = CausalSelfAttention(TINY)
    x = torch.randn(1, TINY.block_size, TINY.n_embd)
    y = x.clone()
    y[0, -1] += 1.0
    out_x, out_y = attn(x), attn(y)
    assert torch.allclose(out_x[0, :-1], out_y[0, :-1])
    assert not torch.allclose(out_x[0, -1], out_y[0, -1])


def test_gpt_builds_the_same_model_and_batch_every_time():
    (m1, b1), (m2, b2) = make_gpt(TINY), make_gpt(TINY)
    assert all(torch.equal(p, q) for p, q in zip(m1.parameters(), m2.parameters(), strict=True))
    assert all(torch.equal(a, b) for a, b in zip(b1, b2, strict=True))


def test_gpt_rejects_a_sequence_longer_than_its_block_size():
    model = GPT(TINY)
    idx = torch.zeros(1, TINY.block_size + 1, dtype=torch.long)
    with pytest.raises(ValueError, match="block_size"):
        model(idx, idx)
