#!/usr/bin/env python3
"""torch_gpt2.py - GPT-2 trained as a team would without trainyard, timed.

PyTorch with bf16 autocast, scaled_dot_product_attention (flash attention
on GPUs), torch.compile and a fused AdamW where this PyTorch has them; random
init, one batch of random tokens taken again every step (the timing is
the point; the loss must still fall, which shows the step trains). Prints
one JSON line: tokens/s, MFU as (6N + 6LCT) FLOPs a token (N parameters,
L layers, C channels, T positions) over the peak, the losses, and which
of PyTorch's features ran.

tests/gpu/run runs it beside trainyard's trainer on the same model and
batch (GPT-2 124M, B=16, T=1024, bf16); tests/trainer/train_torch_reference.sh
runs it on the CPU at a tiny size, so that it cannot rot.
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, c, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.fc, self.fc_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def attend(self, q, k, v):
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        t = q.size(-2)  # PyTorch before 2.0: the scores in memory
        a = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        keep = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        return a.masked_fill(~keep, float("-inf")).softmax(-1) @ v

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = self.attend(q, k, v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, seq, layers, c, heads):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, c), nn.Embedding(seq, c)
        self.blocks = nn.ModuleList(Block(c, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(c)
        for name, p in self.named_parameters():  # GPT-2's init
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # the classifier tied to wte
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--channels", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first (compilation)")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    ap.add_argument("--compile", choices=("auto", "no"), default="auto")
    ap.add_argument("--peak-tflops", type=float, default=989.0,
                    help="the device's dense peak (H100/H200 bf16: 989)")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()

    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    model = GPT(a.vocab, a.seq, a.layers, a.channels, a.heads).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() == 2]
    rest = [p for p in model.parameters() if p.dim() != 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]
    fused = False
    try:
        opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.95), eps=1e-8,
                                fused=dev.type == "cuda")
        fused = dev.type == "cuda"
    except TypeError:  # a PyTorch without the fused AdamW
        opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    compiled = a.compile == "auto" and hasattr(torch, "compile") and dev.type == "cuda"
    step_model = torch.compile(model) if compiled else model
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    low = a.dtype == "bf16"

    gen = torch.Generator().manual_seed(a.seed)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=gen).to(dev)
    x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step():
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=low):
            loss = step_model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    losses = [float(step()) for _ in range(a.warmup)]
    sync()
    t0 = time.perf_counter()
    timed = [step() for _ in range(a.steps)]
    sync()
    secs = time.perf_counter() - t0
    losses += [float(v) for v in timed]

    flops_per_token = 6 * n_params + 6 * a.layers * a.channels * a.seq
    tokens_per_s = a.batch * a.seq * a.steps / secs
    print(json.dumps({
        "tokens_per_s": tokens_per_s,
        "mfu": tokens_per_s * flops_per_token / (a.peak_tflops * 1e12),
        "flops_per_token": flops_per_token,
        "formula": "(6N + 6LCT) FLOPs a token x tokens/s / peak",
        "params": n_params,
        "losses": losses,
        "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
        "dtype": a.dtype, "compiled": compiled, "fused_adamw": fused,
        "sdpa": hasattr(F, "scaled_dot_product_attention"),
        "torch": torch.__version__,
        "batch": a.batch, "seq": a.seq, "layers": a.layers, "channels": a.channels,
        "steps": a.steps, "seconds": secs, "peak_tflops": a.peak_tflops,
    }))


if __name__ == "__main__":
    main()
