"""What the PyTorch peers (torch_mlp.py, torch_cnn.py) share: timing a training step."""
import time

import torch


def report_rate(step, minibatch, seconds, cpu_threads, warmup=3):
    """Runs step(i) for `seconds` after `warmup` calls and prints "samples_per_sec=X
    cpu_samples_per_sec=Y": Y is the rate the run's CPU time would give with its cpu_threads to
    itself (samples / (CPU seconds / threads)); on a loaded machine closer to the idle rate."""
    for i in range(warmup):
        step(i)
    n, start, cpu0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        step(n)
        n += 1
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu0
    print(f"samples_per_sec={n * minibatch / elapsed:.1f} "
          f"cpu_samples_per_sec={n * minibatch * cpu_threads / cpu:.1f}")


def report_training_rate(model, opt, loss_fn, batches, autocast, minibatch, seconds, cpu_threads,
                         warmup=3):
    """report_rate of one SGD step on batches in turn (forward and loss under bf16 autocast when
    autocast == "bf16", fp32 parameters and optimizer)."""
    def step(i):
        x, y = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        if autocast == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_fn(model(x).float(), y)
        else:
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    report_rate(step, minibatch, seconds, cpu_threads, warmup)
