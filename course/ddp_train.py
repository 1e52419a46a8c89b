"""Train a small regression model with DistributedDataParallel, on one process or on many.

    python ddp_train.py --checkpoint-dir DIR                                   # one process
    torchrun --standalone --nproc-per-node=2 ddp_train.py --checkpoint-dir DIR  # two ranks

DDP is detected from the environment. torchrun puts RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT into every rank's environment, and
``dist.init_process_group(backend)`` reads them itself (the default init_method is
"env://"): the script never passes a rank by hand. Without them it trains alone.

Either way it trains on the same global batches: a DistributedSampler shuffles the same
permutation on every rank (seeded by SEED + epoch) and deals it out, so 2 ranks with
batch B see together exactly the 2B samples one process sees with batch 2B. DDP averages
the ranks' gradients, so both runs end with the same weights (chapter 05 checks this).

Only rank 0 prints (the lines of 2 ranks would interleave at random) and only rank 0
writes the checkpoint; every rank then loads it back.
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

SEED = 0
N_SAMPLES = 16
N_FEATURES = 4
CHECKPOINT = "checkpoint.pt"
TORCHRUN_VARIABLES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "GROUP_RANK",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
)


def make_dataset(n: int = N_SAMPLES) -> TensorDataset:
    """Noisy samples of a fixed linear function: the same on every rank and every run."""
    gen = torch.Generator().manual_seed(SEED)
    x = torch.randn(n, N_FEATURES, generator=gen)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1 * torch.randn(n, 1, generator=gen)
    return TensorDataset(x, y)


def make_model() -> nn.Module:
    """A linear layer with the same initial weights on every rank (DDP also broadcasts
    rank 0's weights when it wraps the model, so a rank with other weights is overruled)."""
    torch.manual_seed(SEED)
    return nn.Linear(N_FEATURES, 1)


def setup(backend: str) -> tuple[int, int, torch.device]:
    """Join the process group when torchrun started us; return (rank, world size, device)."""
    if "RANK" not in os.environ:  # plain `python ddp_train.py`: one process, no group
        return 0, 1, torch.device("cpu")
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":  # one GPU per rank, chosen by the rank's place on its machine
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    # env://: RANK and WORLD_SIZE come from the environment; NCCL is told its GPU up front.
    dist.init_process_group(backend, device_id=device if device.type == "cuda" else None)
    return dist.get_rank(), dist.get_world_size(), device


def record_gradients(model: DDP) -> dict[str, object]:
    """Keep a copy of the first gradient bucket as it enters DDP's all-reduce and as it
    leaves it, with the shapes of the parameters it holds, through a communication hook.
    The hook does what DDP does without one: divide by the world size, all-reduce (sum),
    i.e. average."""
    seen: dict[str, object] = {}

    def hook(state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        seen.setdefault("shapes", [tuple(p.shape) for p in bucket.parameters()])
        seen.setdefault("before", bucket.buffer().cpu().clone())

        def after(future: torch.futures.Future[torch.Tensor]) -> torch.Tensor:
            seen.setdefault("after", future.value().cpu().clone())
            return future.value()

        return default_hooks.allreduce_hook(None, bucket).then(after)

    model.register_comm_hook(None, hook)
    return seen


def gather(value: object, world_size: int) -> list[object]:
    """Every rank's value, on every rank (a list in rank order)."""
    if not dist.is_initialized():
        return [value]
    values: list[object] = [None] * world_size
    dist.all_gather_object(values, value)
    return values


def fmt(t: torch.Tensor) -> str:
    return "[" + ", ".join(f"{v:7.4f}" for v in t.flatten().tolist()) + "]"


def train(
    rank: int, world_size: int, device: torch.device, epochs: int, global_batch: int, lr: float
) -> tuple[nn.Module, torch.optim.Optimizer]:
    """SGD on the mean squared error; each step sees one global batch, split over the ranks."""
    say = print if rank == 0 else (lambda *args: None)
    dataset = make_dataset()
    model = make_model().to(device)
    if dist.is_initialized():
        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
        seen = record_gradients(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    sampler = DistributedSampler(
        dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=SEED
    )
    loader = DataLoader(dataset, batch_size=global_batch // world_size, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same one on every rank
        for r, indices in enumerate(gather(list(sampler), world_size)):
            say(f"epoch {epoch}: rank {r} gets samples {indices}")
        total = torch.zeros(2, device=device)  # (sum of losses, number of samples)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()  # with DDP: the gradients are averaged over the ranks here
            optimizer.step()
            total += torch.stack([loss.detach() * len(x), torch.tensor(len(x), device=device)])
        if dist.is_initialized():
            dist.all_reduce(total)  # every rank's share of the epoch's loss
        say(f"epoch {epoch}: mean loss {(total[0] / total[1]).item():.4f}")
    if dist.is_initialized():
        say(f"gradients of the first step, flattened into one bucket of shapes {seen['shapes']}:")
        for when in ("before", "after"):
            for r, grad in enumerate(gather(seen[when], world_size)):
                say(f"  {when:6} the all-reduce, rank {r}: {fmt(grad)}")
    return model, optimizer


def save_and_reload(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    folder: str,
    rank: int,
    world_size: int,
    epochs: int,
) -> None:
    """Rank 0 writes the checkpoint, every rank reads it back. Only rank 0 writes: the
    replicas are identical, and several processes writing one file can leave it torn."""
    plain = model.module if isinstance(model, DDP) else model  # without DDP's "module." prefix
    path = os.path.join(folder, CHECKPOINT)
    if rank == 0:
        torch.save(
            {"model": plain.state_dict(), "optimizer": optimizer.state_dict(), "epochs": epochs},
            path,
        )
        print(f"rank 0 saved {CHECKPOINT}: {sorted(plain.state_dict())}")
    if dist.is_initialized():
        dist.barrier()  # nobody reads before rank 0 has written
    state = torch.load(path, map_location="cpu", weights_only=True)
    same = all(torch.equal(state["model"][k], v.cpu()) for k, v in plain.state_dict().items())
    for r, ok in enumerate(gather(same, world_size)):
        if rank == 0:
            print(f"rank {r} loaded {CHECKPOINT}: equal to its own replica: {ok}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint-dir", required=True, help="folder for checkpoint.pt")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument(
        "--global-batch", type=int, default=8, help="samples per step, all ranks together"
    )
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument(
        "--backend",
        choices=["auto", "gloo", "nccl"],
        default="auto",
        help="auto: nccl when a GPU is there, gloo otherwise",
    )
    args = parser.parse_args(argv)
    rank, world_size, device = setup(args.backend)
    if args.global_batch % world_size:
        raise SystemExit(
            f"--global-batch {args.global_batch} must be a multiple of the world size {world_size}"
        )
    if rank == 0:
        backend = dist.get_backend() if dist.is_initialized() else "none (one process)"
        print(f"world size {world_size}, backend {backend}, rank {rank} (a {type(rank).__name__})")
    if dist.is_initialized():
        launcher = " ".join(f"{name}={os.environ[name]}" for name in TORCHRUN_VARIABLES)
        for r, variables in enumerate(gather(launcher, world_size)):
            if rank == 0:
                print(f"rank {r}'s environment: {variables}")
    model, optimizer = train(rank, world_size, device, args.epochs, args.global_batch, args.lr)
    save_and_reload(model, optimizer, args.checkpoint_dir, rank, world_size, args.epochs)
    if dist.is_initialized():
        dist.destroy_process_group()
        # In torch 2.13 a gloo process group that DDP has used outlives destroy_process_group
        # (its threads keep running), and tearing it down while Python exits sometimes aborts
        # the rank ("terminate called without an active exception") after all the work is
        # done. So a rank leaves without the interpreter's teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
