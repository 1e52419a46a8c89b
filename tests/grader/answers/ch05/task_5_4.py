"""Exercise 5.4 of solutions/05_distributed.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 5.4's right training (the solution's, set_epoch every epoch, rank 0 alone saving): the
# alternative saves differently, and each wrong answer but the first changes set_epoch.
DDP_TRAIN = """\
def train(rank, world_size, checkpoint_dir, epochs=3):
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    dataset = make_regression_data()
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            F.mse_loss(model(x), y).backward()
            optimizer.step()
    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "model.pt"))
"""

WITHOUT_SET_EPOCH = DDP_TRAIN.replace("        sampler.set_epoch(epoch)\n", "")

SET_EPOCH_CONSTANT = DDP_TRAIN.replace("sampler.set_epoch(epoch)", "sampler.set_epoch(0)")

# Rank 0 saves after every epoch: the last file is right, but written once per epoch.
SAVED_EVERY_EPOCH = DDP_TRAIN.replace(
    """\
            optimizer.step()
    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "model.pt"))
""",
    """\
            optimizer.step()
        if rank == 0:
            torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "model.pt"))
""",
)

# Every rank trains on all 16 samples in batches of 8: the same global batches, so the same
# weights, but each rank repeats the others' work.
ALL_THE_DATA_ON_EVERY_RANK = DDP_TRAIN.replace("num_replicas=world_size, rank=rank", "num_replicas=1, rank=0").replace(
    "batch_size=8 // world_size", "batch_size=8"
)


TASK = Task(
    # Rank 0 saves the wrapped model's state dict, its keys unprefixed, and every rank waits.
    alternative=DDP_TRAIN.replace(
        """\
    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "model.pt"))
""",
        """\
    if dist.get_rank() == 0:
        state = {key.removeprefix("module."): value for key, value in model.state_dict().items()}
        torch.save(state, os.path.join(checkpoint_dir, "model.pt"))
    dist.barrier()
""",
    ),
    wrong=[
        Wrong(
            "The buggy function unchanged: every rank saves.",
            hint="Only rank 0",
            code="""\
def train(rank, world_size, checkpoint_dir, epochs=3):
    train_buggy(rank, world_size, checkpoint_dir, epochs)
""",
        ),
        Wrong(
            "Rank 0 saves the checkpoint after every epoch instead of once.",
            hint="once (torch.save ran 3 time(s) on rank 0",
            code=SAVED_EVERY_EPOCH,
        ),
        Wrong("Saves from rank 0 but never calls set_epoch.", hint="set_epoch", code=WITHOUT_SET_EPOCH),
        Wrong(
            "Calls set_epoch with a constant.",
            hint="set_epoch(epoch)",
            code=SET_EPOCH_CONSTANT,
        ),
        Wrong(
            "Every rank trains on all the data, in global batches of 8.",
            hint="its own share of the data",
            code=ALL_THE_DATA_ON_EVERY_RANK,
        ),
    ],
)

# A red team's 5.4 (2026-11-28): inputs the checks never gave (3 ranks, 4 epochs, the
# default epochs, two calls, a folder holding a file).
TASK.wrong.extend(
    [
        Wrong(
            ("default epochs=1 instead of 3: run_ranks(train, args=(folder,)) trains 1 epoch"),
            hint="train is wrong on 3 ranks",
            code=(
                "def train(rank, world_size, checkpoint_dir, epochs=1):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                "        sampler.set_epoch(epoch)\n"
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
        Wrong(
            ("sampler drop_last=True: other training than the given one when world_size does not divide 16"),
            hint="train is wrong on 3 ranks",
            code=(
                "def train(rank, world_size, checkpoint_dir, epochs=3):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0, drop_last=True)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                "        sampler.set_epoch(epoch)\n"
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
        Wrong(
            ("epoch counter kept across calls: a second call in one process continues at epoch 3"),
            hint="train is wrong on 3 ranks",
            code=(
                '_seen = {"epochs": 0}  # epochs trained so far, across calls\n'
                "def train(rank, world_size, checkpoint_dir, epochs=3):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                '        sampler.set_epoch(_seen["epochs"])\n'
                '        _seen["epochs"] += 1\n'
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
        Wrong(
            ("set_epoch(epoch % 3): epoch 3 repeats epoch 0's order"),
            hint="train is wrong on 3 ranks",
            code=(
                "def train(rank, world_size, checkpoint_dir, epochs=3):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                "        sampler.set_epoch(epoch % 3)\n"
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
        Wrong(
            ("rank 0 wipes checkpoint_dir (and anything else in it) before saving"),
            hint="train is wrong on 3 ranks",
            code=(
                "import shutil\n"
                "\n"
                "\n"
                "def train(rank, world_size, checkpoint_dir, epochs=3):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                "        sampler.set_epoch(epoch)\n"
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                "        shutil.rmtree(checkpoint_dir)  # start from a clean checkpoint folder\n"
                "        os.makedirs(checkpoint_dir)\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
        Wrong(
            ("set_epoch(min(epoch, 2))"),
            hint="train is wrong on 3 ranks",
            code=(
                "def train(rank, world_size, checkpoint_dir, epochs=3):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                "        sampler.set_epoch(min(epoch, 2))\n"
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
    ]
)
