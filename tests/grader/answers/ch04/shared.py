"""What several tasks of solutions/04_amp.ipynb use: right cells their wrong answers change, setups, helpers."""

# Lines of 4.4's and 4.6's right steps that their wrong answers move.
UNSCALE = "    scaler.unscale_(optimizer)\n"

CLIP = "    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"

AUTOCAST_CPU = 'torch.autocast("cpu", '

# More of that red team's answers: autocast's conditions and what reaches GradScaler.
FP16_FOR_FLOATS_ONLY = "dtype=torch.float16, enabled=x.is_floating_point())"
