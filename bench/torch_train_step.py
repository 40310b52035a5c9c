"""The PyTorch twin of bench_train_step: samples/s of a training step of ringgrad-train's
MLP (784-256-128-10) and CNN (conv 1->16 5x5 pad 2, relu, maxpool 2, conv 16->32 5x5 pad 2,
relu, maxpool 2, linear 1568->10) on random 1x28x28 inputs, SGD lr 0.01 momentum 0.9.
Usage: python3 bench/torch_train_step.py [cuda|cpu] [steps]  (prints "<model> <batch> <samples/s>")"""
import sys
import time

import torch
from torch import nn
from torch_models import make  # bench/, the script's own folder


def samples_per_second(name, batch, steps, device):
    torch.manual_seed(0)
    model = make(name).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 1, 28, 28, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    def sync():
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    for _ in range(5):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return batch * steps / (time.perf_counter() - start)


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    for name, batch in (("mlp", 128), ("cnn", 64)):
        print(f"{name} {batch} {samples_per_second(name, batch, steps, device):.0f}")


if __name__ == "__main__":
    main()
