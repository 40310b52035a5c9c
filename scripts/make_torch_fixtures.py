#!/usr/bin/python3
# Writes tests/fixtures/torch/{mlp,cnn}_{f32,f64}.safetensors: weights, input, targets, the
# cross-entropy loss and every parameter gradient computed by PyTorch, which
# nn.torch_parity_* compares ringgrad against. Needs Debian's python3-torch:
#   /usr/bin/python3 scripts/make_torch_fixtures.py
import json
import pathlib
import struct

import torch

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "torch"
DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}


def write_safetensors(path, tensors, metadata):
    """The safetensors layout: u64 LE header length, JSON header, raw little-endian data."""
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        data = tensors[name].detach().contiguous().numpy().tobytes()
        header[name] = {"dtype": DTYPES[tensors[name].dtype], "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)  # data starts 8-byte aligned, as the reference writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def mlp():  # 20-16-8-5 with ReLU
    return torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8), torch.nn.ReLU(),
                               torch.nn.Linear(8, 5))


def cnn():  # (N, 1, 10, 10) -> conv 3x3 pad 1 -> 10x10 -> maxpool 2 -> 5x5 -> conv 3x3 stride 2 pad 1 -> 3x3
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Conv2d(4, 6, 3, stride=2, padding=1), torch.nn.ReLU(),
                               torch.nn.AvgPool2d(3, stride=1, padding=1), torch.nn.Flatten(),
                               torch.nn.Linear(54, 5))


def fixture(name, build, input_shape, batch):
    torch.manual_seed(0)
    model64 = build().double()
    x64 = torch.randn(batch, *input_shape, dtype=torch.float64)
    targets = torch.randint(0, 5, (batch,))
    for dtype, suffix in ((torch.float64, "f64"), (torch.float32, "f32")):
        model = build().to(dtype)
        model.load_state_dict(model64.state_dict())  # the same weights, rounded for float32
        x = x64.to(dtype)
        loss = torch.nn.functional.cross_entropy(model(x), targets)
        loss.backward()
        tensors = {"input": x, "targets": targets, "loss": loss.detach().reshape(1)}
        for pname, p in model.named_parameters():
            tensors["param." + pname] = p.detach()
            tensors["grad." + pname] = p.grad
        write_safetensors(OUT / f"{name}_{suffix}.safetensors", tensors,
                          {"model": repr(model).replace("\n", " "), "torch": torch.__version__,
                           "writer": "scripts/make_torch_fixtures.py"})


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    fixture("mlp", mlp, (20,), 6)
    fixture("cnn", cnn, (1, 10, 10), 4)
