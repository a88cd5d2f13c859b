#!/usr/bin/env python3
"""The PyTorch peer for bench/cnn-throughput.sh: SGD training throughput of a Fashion-MNIST CNN on
random 28 x 28 images, CPU only. Prints one line: "samples_per_sec=X cpu_samples_per_sec=Y".

Usage: torch_cnn.py --minibatch 128 --threads 1 [--net recipe|small] [--seconds 5]
                    [--autocast bf16] [--channels-last] [--cpu-threads N]
The networks, layer for layer as parnet's (batch norm without scale and offset, as parnet's):
  recipe (egs/fashion-mnist/conf/cnn.config): conv 3x3 x 32 (pad 1), batch norm, max-pool 2x2,
    ReLU, conv 3x3 x 64 (pad 1), batch norm, max-pool 2x2, ReLU, affine 256, batch norm, ReLU,
    affine 10, softmax cross-entropy;
  small (bench/conf/cnn-small.config, the recipe's network until 2026-12-03): conv 3x3 x 32, ReLU,
    max-pool 2x2, conv 3x3 x 64, ReLU, max-pool 2x2, batch norm, affine 256, ReLU, affine 10.
--threads: torch's intra-op threads (its oneDNN convolutions use them);
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
    p.add_argument("--net", choices=["recipe", "small"], default="recipe")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--autocast", choices=["none", "bf16"], default="none")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--cpu-threads", type=int, default=1,
                   help="threads the run may use in all (for cpu_samples_per_sec)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    nn = torch.nn
    if a.net == "recipe":
        model = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32, affine=False), nn.MaxPool2d(2),
            nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64, affine=False), nn.MaxPool2d(2),
            nn.ReLU(), nn.Flatten(),
            nn.Linear(64 * 7 * 7, 256), nn.BatchNorm1d(256, affine=False), nn.ReLU(),
            nn.Linear(256, 10))
    else:
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
