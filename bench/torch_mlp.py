#!/usr/bin/env python3
"""The PyTorch peer for bench/train-throughput.sh: SGD training throughput of a ReLU MLP on random
data, CPU only. Prints one line: "samples_per_sec=X".

Usage: torch_mlp.py --dims 784,1024,1024,1024,10 --minibatch 512 --threads 1 [--seconds 5]
                    [--autocast bf16]
--autocast bf16 runs forward and loss under torch.autocast('cpu', dtype=torch.bfloat16), the
one-line mixed precision a PyTorch user would pick (fp32 parameters and optimizer). Also prints
cpu_samples_per_sec, the rate per --cpu-threads seconds of process CPU time.
Debian's torch calls OpenBLAS; its fastest setting here was torch.set_num_threads(1) with OpenBLAS
keeping its own threads (OPENBLAS_NUM_THREADS), so --threads sets torch's intra-op threads only.
"""
import argparse
import torch

from torch_timing import report_training_rate


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dims", required=True)
    p.add_argument("--minibatch", type=int, default=512)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--autocast", choices=["none", "bf16"], default="none")
    p.add_argument("--cpu-threads", type=int, default=1,
                   help="threads the run may use in all (for cpu_samples_per_sec)")
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

    report_training_rate(model, opt, loss_fn, batches, a.autocast, a.minibatch, a.seconds,
                         a.cpu_threads, warmup=5)


if __name__ == "__main__":
    main()
