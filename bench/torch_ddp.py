"""The PyTorch twin of bench_ddp_scaling: samples/s of DistributedDataParallel training
(gloo, one thread per process, processes spawned on 127.0.0.1) of ringgrad-train's MLP
(784-256-128-10) and CNN (conv 1->16 5x5 pad 2, relu, maxpool 2, conv 16->32 5x5 pad 2,
relu, maxpool 2, linear 1568->10), cross-entropy, SGD lr 0.01 momentum 0.9, on fixed random
1x28x28 batches (one per rank), with 1 and N ranks at the same per-rank batch.
One spawn of N processes measures both (importing torch costs seconds per process): the
1-rank figure is rank 0 alone in a gloo group of one while the others wait at a barrier
(gloo's waits block on sockets, they do not spin), then all N together; the two alternate.
Each figure is the median of --reps repetitions of --steps timed steps (after --warmup),
timed on the slowest rank.
Usage: /usr/bin/python3 bench/torch_ddp.py [--model mlp|cnn|both] [--batch 64] [--ranks 2]
       [--steps S (mlp 300, cnn 30)] [--warmup 5] [--reps 3]
Prints, per model, a line read by bench/run_ddp_scaling.sh:
  torch_ddp model=mlp batch=64 ranks=2 rate1=<samples/s> rateN=<samples/s> speedup=<x>"""
import argparse
import os

# One thread per process, set before torch loads (spawned children inherit the environment).
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")

import socket  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch_models import make  # noqa: E402  (bench/, the script's own folder)

DEFAULT_STEPS = {"mlp": 300, "cnn": 30}


def time_ddp(name, args, steps, group=None):
    """Seconds `steps` training steps take on the slowest rank of `group` (None: the world)."""
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(make(name), process_group=group)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(1 + rank)
    x = torch.randn(args.batch, 1, 28, 28, generator=gen)
    y = torch.randint(0, 10, (args.batch,), generator=gen)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    dist.barrier(group=group)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    seconds = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX, group=group)
    return seconds.item()


def worker(rank, world, port, models, args, queue):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    alone = dist.new_group([0])  # a collective: every rank creates it
    rates = {}
    for name in models:
        steps = args.steps or DEFAULT_STEPS[name]
        one, many = [], []
        for _ in range(args.reps):
            if rank == 0:
                one.append(args.batch * steps / time_ddp(name, args, steps, alone))
            dist.barrier()
            many.append(args.batch * world * steps / time_ddp(name, args, steps))
        if rank == 0:
            rates[name] = (statistics.median(one), statistics.median(many))
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        queue.put(rates)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]




def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=["mlp", "cnn", "both"], default="both")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    models = ["mlp", "cnn"] if args.model == "both" else [args.model]
    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(worker, args=(args.ranks, free_port(), models, args, queue), nprocs=args.ranks, join=True)
    rates = queue.get()
    for name in models:
        one, many = rates[name]
        print(f"torch_ddp model={name} batch={args.batch} ranks={args.ranks} rate1={one:.0f} rateN={many:.0f} "
              f"speedup={many / one:.3f}", flush=True)


if __name__ == "__main__":
    main()
