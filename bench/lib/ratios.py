#!/usr/bin/env python3
"""Summarises per-pair ratios (scalelab/peer) of an alternated bench.

Prints the median with its range, then the geometric mean's 95 % interval
(Student's t on the logs of the ratios, which are symmetric there) and what
it says against the target 1.0: `=` when the interval holds 1.0 (no
difference this run can tell from the noise), `>` or `<` when the whole
interval is above or below. Used by bench/h2_vs_h2load and
bench/redis_vs_redis_benchmark.

Usage: bench/lib/ratios.py RATIO [RATIO ...]
"""
import math
import statistics
import sys

# Two-sided 95 % quantiles of Student's t by degrees of freedom.
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26,
       10: 2.23, 12: 2.18, 15: 2.13, 20: 2.09, 30: 2.04}


def t95(df):
    """The quantile for `df`, from the next smaller tabled df (wider: safe)."""
    return T95[max(k for k in T95 if k <= df)] if df < 60 else 1.96


def summary(values):
    v = sorted(values)
    out = f"{statistics.median(v):.2f} ({v[0]:.2f}-{v[-1]:.2f})"
    if len(v) < 2:
        return out + " [one pair: no interval]"
    logs = [math.log(x) for x in v]
    mean = statistics.fmean(logs)
    half = t95(len(v) - 1) * statistics.stdev(logs) / math.sqrt(len(v))
    lo, hi = math.exp(mean - half), math.exp(mean + half)
    side = "=" if lo <= 1.0 <= hi else (">" if lo > 1.0 else "<")
    return f"{out} [{lo:.2f}-{hi:.2f} {side}]"


if __name__ == "__main__":
    try:
        ratios = [float(a) for a in sys.argv[1:]]
    except ValueError as e:
        sys.exit(f"ratios.py: {e}: give the ratios as numbers")
    if not ratios or any(r <= 0 for r in ratios):
        sys.exit("ratios.py: give one or more positive ratios")
    print(summary(ratios))
