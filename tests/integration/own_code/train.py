"""A small causal language model trained with DistributedDataParallel.

The program of tests/integration/sched_own_code.sh: a team's own code as
trainyard runs it in a command job (docs/own-code.md). CPU and gloo;
deterministic, so that a run resumed from a checkpoint reproduces an
uninterrupted run's losses.

  python3 train.py [--every N] [--step-sleep S] [--context T] [--batch B]

Data: the token shards of $TRAINYARD_DATA_DIR/train (1024-byte header,
then little-endian uint16 tokens). Token ids are folded into VOCAB buckets
to keep the model small. The global batch is B sequences of T tokens; step
s reads the windows after those of steps 1..s-1, so the data position is a
function of the step, and rank r of W takes sequences r, r+W, ... of it:
every layout sees the same batch.
"""

import argparse
import glob
import os
import struct
import sys
import time
from array import array

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import trainyard

VOCAB = 512
D_MODEL = 32
HEADER = 1024
MAGIC = 20240520


class TinyLM(torch.nn.Module):
    def __init__(self, context):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, D_MODEL)
        self.pos = torch.nn.Embedding(context, D_MODEL)
        self.block = torch.nn.TransformerEncoderLayer(
            D_MODEL, nhead=2, dim_feedforward=4 * D_MODEL, dropout=0.0, batch_first=True
        )
        self.head = torch.nn.Linear(D_MODEL, VOCAB)
        self.register_buffer(
            "mask", torch.triu(torch.full((context, context), float("-inf")), diagonal=1)
        )

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        return self.head(self.block(h, src_mask=self.mask))


def load_tokens():
    root = trainyard.data_dir()
    if root is None:
        print("train.py: the job names no dataset", file=sys.stderr)
        sys.exit(trainyard.EXIT_DATA_ERROR)
    tokens = array("H")
    for path in sorted(glob.glob(os.path.join(root, "train", "shard_*.bin"))):
        with open(path, "rb") as f:
            head = f.read(HEADER)
            magic, version, n = struct.unpack("<3i", head[:12])
            if magic != MAGIC or version != 1:
                print(f"train.py: {path} is not a token shard", file=sys.stderr)
                sys.exit(trainyard.EXIT_DATA_ERROR)
            body = array("H")
            body.frombytes(f.read(2 * n))
            if sys.byteorder != "little":
                body.byteswap()
            tokens.extend(body)
    if len(tokens) < 1024:
        print(f"train.py: {len(tokens)} tokens are too few", file=sys.stderr)
        sys.exit(trainyard.EXIT_DATA_ERROR)
    return torch.tensor(tokens, dtype=torch.long) % VOCAB


def batch(tokens, step, batch_size, context, rank, world):
    """The sequences of rank `rank` in step `step`'s global batch (inputs, targets)."""
    windows = (len(tokens) - 1) // context
    first = (step - 1) * batch_size
    idx = [(first + i) % windows for i in range(rank, batch_size, world)]
    x = torch.stack([tokens[w * context : (w + 1) * context] for w in idx])
    y = torch.stack([tokens[w * context + 1 : (w + 1) * context + 1] for w in idx])
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=4, help="checkpoint every N steps")
    ap.add_argument("--step-sleep", type=float, default=0.0, help="seconds a step waits")
    ap.add_argument("--context", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8, help="global batch, sequences")
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    dist.init_process_group("gloo")  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch % world:
        print(f"train.py: batch {args.batch} does not split over {world} ranks", file=sys.stderr)
        return trainyard.EXIT_INVALID_CONFIG
    tokens = load_tokens()
    steps = trainyard.steps() or 20

    torch.manual_seed(1234)
    model = TinyLM(args.context)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    start = 1
    resumed = trainyard.resume()
    if resumed is not None:
        step, path = resumed
        state = torch.load(os.path.join(path, "state.pt"))
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = step + 1
        print(f"rank {rank}: resumed from step {step}", flush=True)
    ddp = DDP(model)

    for step in range(start, steps + 1):
        if args.step_sleep:
            time.sleep(args.step_sleep)
        x, y = batch(tokens, step, args.batch, args.context, rank, world)
        logits = ddp(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        # the global batch's loss: every rank's share weighs the same
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        mean /= world
        trainyard.report_step(
            step,
            loss=mean.item(),
            tokens=args.batch * args.context,
            lr=opt.param_groups[0]["lr"],
            world=world,
        )
        # SIGTERM reaches the ranks at different steps: they agree to stop together
        stop = torch.tensor([int(trainyard.should_stop())])
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        stop = bool(stop.item())
        if step % args.every == 0 or step == steps or stop:
            if rank == 0:  # DDP keeps every rank's model and optimizer the same
                d = trainyard.checkpoint_dir(step)
                torch.save({"model": model.state_dict(), "opt": opt.state_dict()},
                           os.path.join(d, "state.pt"))
            dist.barrier()
            trainyard.checkpoint_done(step)
        if stop:
            break
    # Every rank is past its last checkpoint's barrier. Leave without the
    # gloo process group's teardown (destroy_process_group, or its
    # destructor at exit): in Debian's PyTorch 1.13 it can block once the
    # peer has closed its end, and the ranks then sit silent until the
    # platform kills the launch as hung (one run in three here).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(trainyard.EXIT_STOPPED if stop else 0)


if __name__ == "__main__":
    sys.exit(trainyard.run(main))
