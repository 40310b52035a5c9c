#!/usr/bin/python3
# Writes tests/data/fixtures/distributed_sampler.json: the index lists of PyTorch's
# torch.utils.data.DistributedSampler for many (size, num_replicas, rank, drop_last), which
# data.distributed_sampler_matches_pytorch compares against ours. Needs Debian's
# python3-torch:  /usr/bin/python3 scripts/make_sampler_fixtures.py
# The shuffle=true lists are recorded for information only: our permutation comes from
# ringgrad's Philox generator, not from torch's, so only the padding/striding rule is shared.
import json
import pathlib

import torch
from torch.utils.data import DistributedSampler

SIZES = [0, 1, 2, 3, 5, 7, 10, 16, 17, 100, 101]
REPLICAS = [1, 2, 3, 4, 8]


def sampler_indices(size, replicas, rank, shuffle, drop_last, seed=0, epoch=0):
    sampler = DistributedSampler(range(size), num_replicas=replicas, rank=rank, shuffle=shuffle,
                                 seed=seed, drop_last=drop_last)
    sampler.set_epoch(epoch)
    return [int(i) for i in sampler]


def case(size, replicas, rank, shuffle, drop_last, seed=0, epoch=0):
    return {"size": size, "num_replicas": replicas, "rank": rank, "shuffle": shuffle, "drop_last": drop_last,
            "seed": seed, "epoch": epoch,
            "indices": sampler_indices(size, replicas, rank, shuffle, drop_last, seed, epoch)}


def main():
    unshuffled = [case(size, replicas, rank, False, drop_last)
                  for size in SIZES for replicas in REPLICAS for rank in range(replicas)
                  for drop_last in (False, True)]
    shuffled = [case(size, replicas, rank, True, drop_last, seed=seed, epoch=epoch)
                for size in (10, 17) for replicas in (2, 3) for rank in range(replicas)
                for drop_last in (False, True) for seed, epoch in ((0, 0), (0, 1), (42, 0))]
    out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "fixtures" / "distributed_sampler.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "generator": "scripts/make_sampler_fixtures.py",
        "torch_version": torch.__version__,
        "unshuffled": unshuffled,
        "shuffled_for_information_only": shuffled,
    }
    out.write_text(json.dumps(document, separators=(",", ":")) + "\n")
    print(f"wrote {len(unshuffled)} unshuffled and {len(shuffled)} shuffled cases to {out}")


if __name__ == "__main__":
    main()
