"""ringgrad-train's MLP (784-256-128-10) and CNN (conv 1->16 5x5 pad 2, relu, maxpool 2,
conv 16->32 5x5 pad 2, relu, maxpool 2, linear 1568->10) in PyTorch, for the bench scripts
that compare against them (torch_train_step.py, torch_ddp.py)."""
from torch import nn


def make(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    return nn.Sequential(nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))
