#!/usr/bin/env python3
"""The PyTorch peer for bench/cnn-throughput.sh: SGD training throughput of the Fashion-MNIST CNN
of bench/conf/cnn-small.config on random 28 x 28 images, CPU only. Prints one line:
"samples_per_sec=X cpu_samples_per_sec=Y".

Usage: torch_cnn.py --minibatch 128 --threads 1 [--seconds 5] [--autocast bf16]
                    [--channels-last] [--cpu-threads N]
The network, layer for layer as parnet's: conv 3x3 x 32 (pad 1), ReLU, max-pool 2x2, conv 3x3 x 64
(pad 1), ReLU, max-pool 2x2, batch norm without scale and offset, affine 256, ReLU, affine 10,
softmax cross-entropy. --threads: torch's intra-op threads (its oneDNN convolutions use them);
--channels-last: NHWC tensors (oneDNN's preferred layout on some CPUs); --autocast bf16: forward
and loss under torch.autocast('cpu', dtype=torch.bfloat16).
"""
import argparse
import torch

from torch_timing import report_training_rate


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--minibatch", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--autocast", choices=["none", "bf16"], default="none")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--cpu-threads", type=int, default=1,
                   help="threads the run may use in all (for cpu_samples_per_sec)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.BatchNorm2d(64, affine=False), nn.Flatten(),
        nn.Linear(64 * 7 * 7, 256), nn.ReLU(), nn.Linear(256, 10))
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    g = torch.Generator().manual_seed(0)
    batches = [(torch.randn(a.minibatch, 1, 28, 28, generator=g).to(memory_format=fmt),
                torch.randint(0, 10, (a.minibatch,), generator=g)) for _ in range(8)]

    report_training_rate(model, opt, loss_fn, batches, a.autocast, a.minibatch, a.seconds,
                         a.cpu_threads, warmup=3)


if __name__ == "__main__":
    main()
