#!/usr/bin/env python3
"""PyTorch baseline for bench/robustness.sh: the same network shape as tests/prog/robustness_run.sh
(2 x 128 ReLU, softmax output), on standardised inputs (train-set mean/stddev), Adam (lr 1e-3),
minibatch 128, the same number of epochs as steps/train.sh's default (4). Prints the test accuracy.
Usage: robustness_torch.py [--epochs 4] <csv-dir>
"""
import sys
import numpy as np
import torch

def main(argv):
    epochs = 4
    if argv and argv[0] == "--epochs":
        epochs = int(argv[1]); argv = argv[2:]
    d = argv[0]
    tr = np.loadtxt(d + "/train.csv", delimiter=",", ndmin=2)
    te = np.loadtxt(d + "/test.csv", delimiter=",", ndmin=2)
    ytr, xtr = tr[:, 0].astype(np.int64), tr[:, 1:]
    yte, xte = te[:, 0].astype(np.int64), te[:, 1:]
    mu, sd = xtr.mean(0), xtr.std(0)
    sd[sd == 0] = 1
    xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
    classes = int(max(ytr.max(), yte.max())) + 1
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = torch.nn.Sequential(torch.nn.Linear(xtr.shape[1], 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, classes))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.tensor(xtr, dtype=torch.float32); y = torch.tensor(ytr)
    for _ in range(epochs):
        perm = torch.randperm(len(y))
        for i in range(0, len(y), 128):
            idx = perm[i:i + 128]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
            loss.backward()
            opt.step()
    with torch.no_grad():
        pred = net(torch.tensor(xte, dtype=torch.float32)).argmax(1).numpy()
    print("%.4f" % (pred == yte).mean())

if __name__ == "__main__":
    main(sys.argv[1:])
