#!/usr/bin/env python3
"""The PyTorch peer for bench/train-throughput.sh: SGD training throughput of a ReLU MLP on random
data, CPU only. Prints one line: "samples_per_sec=X".

Usage: torch_mlp.py --dims 784,1024,1024,1024,10 --minibatch 512 --threads 1 [--seconds 5]
Debian's torch calls OpenBLAS; its fastest setting here was torch.set_num_threads(1) with OpenBLAS
keeping its own threads (OPENBLAS_NUM_THREADS), so --threads sets torch's intra-op threads only.
"""
import argparse
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dims", required=True)
    p.add_argument("--minibatch", type=int, default=512)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seconds", type=float, default=5.0)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    dims = [int(x) for x in a.dims.split(",")]
    layers = []
    for i in range(len(dims) - 1):
        layers.append(torch.nn.Linear(dims[i], dims[i + 1]))
        if i + 2 < len(dims):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
    g = torch.Generator().manual_seed(0)
    batches = [(torch.randn(a.minibatch, dims[0], generator=g),
                torch.randint(0, dims[-1], (a.minibatch,), generator=g)) for _ in range(8)]

    def step(i):
        x, y = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for i in range(5):  # warm-up
        step(i)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < a.seconds:
        step(n)
        n += 1
    elapsed = time.perf_counter() - start
    print(f"samples_per_sec={n * a.minibatch / elapsed:.1f}")


if __name__ == "__main__":
    main()
