#!/usr/bin/env python3
"""NG-SGD's FLOPs against the layer GEMMs' for the two benchmark MLPs, and the bound on its cost
they give at measured rates (docs/BENCHMARKS.md, "Natural gradient's products").
  python3 bench/natgrad-bound.py [rate_fused rate_hj rate_klw_lo rate_klw_hi]
Rates are fractions of the layer GEMMs' rate (defaults: 0.87, 0.8, 0.6, 0.45)."""
import sys

NETS = {'784-1024x3-10': [(784, 1024), (1024, 1024), (1024, 1024), (1024, 10)],
        '440-1024x4-2000': [(440, 1024), (1024, 1024), (1024, 1024), (1024, 1024), (1024, 2000)]}
PERIOD = 4  # Kaldi's update period


def flops(layers, n):
    """layer GEMMs; fused (ordinary calls' 4NDR, update calls' X - H W 2NDR); H and J; K, L, W'"""
    gemm = fused = hj = klw = 0.0
    for i, (din, dout) in enumerate(layers):
        gemm += (2 if i == 0 else 3) * 2.0 * n * din * dout
        for d, r in ((din + 1, min(20, (din + 2) // 2)), (dout, min(80, (dout + 1) // 2))):
            fused += ((PERIOD - 1) * 4.0 + 2.0) * n * d * r / PERIOD
            hj += 4.0 * n * d * r / PERIOD
            kl = 4.0 * r * r * d if n > d else float(r * r * d + r * r * n)  # natgrad_step
            klw += (kl + 4.0 * r * r * d) / PERIOD
    return gemm, fused, hj, klw


def main():
    rf, rhj, rlo, rhi = (float(a) for a in sys.argv[1:5]) if len(sys.argv) > 4 else (0.87, 0.8, 0.6, 0.45)
    for name, layers in NETS.items():
        for n in (128, 512):
            g, f, hj, kw = flops(layers, n)
            f, hj, kw = 100 * f / g, 100 * hj / g, 100 * kw / g
            print(f"{name} mb {n}: FLOPs fused {f:.1f}% / H, J {hj:.1f}% / K, L, W' {kw:.1f}%; "
                  f"bound {f / rf + hj / rhj + kw / rlo:.1f}-{f / rf + hj / rhj + kw / rhi:.1f}%; "
                  f"all at {rf}: {(f + hj + kw) / rf:.1f}%")


if __name__ == '__main__':
    main()
