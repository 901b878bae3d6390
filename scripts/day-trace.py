#!/usr/bin/env python3
"""Writes a 24-hour trace of one replica's traffic in the Azure LLM inference format
(`TIMESTAMP,ContextTokens,GeneratedTokens`, 2024's timestamps: six fractional digits or none,
`+00:00`), for the day-of-traffic benchmark (docs/PERFORMANCE.md).

Prompt and output lengths are drawn from the rows of a real Azure trace (by default the
conversation sample in ../shared/traces/); arrivals follow a day's cycle, the rate at its peak
3.5 times the rate at its trough (the Azure 2024 conversation week's hourly peak/trough is about
3.6; ../shared/traces/FORMATS.md §2). Deterministic: one seed, one file.

Usage: scripts/day-trace.py [--requests N] [--seed S] [--source AZURE_CSV] > target/day.csv
"""
import argparse
import math
import random
import sys

DAY_S = 86_400
AMPLITUDE = 0.555  # (1 + a) / (1 - a) = 3.5


def lengths(path):
    rows = []
    with open(path) as f:
        header = f.readline().strip().split(",")
        ci, gi = header.index("ContextTokens"), header.index("GeneratedTokens")
        for line in f:
            cols = line.strip().split(",")
            if len(cols) > max(ci, gi):
                rows.append((int(cols[ci]), int(cols[gi])))
    return rows


def arrival_times(n, rng):
    """n times in [0, DAY_S) with density ∝ 1 + a·sin(2π(t/DAY − 1/4)) (trough at midnight)."""
    out = []
    while len(out) < n:
        t = rng.random() * DAY_S
        if rng.random() * (1 + AMPLITUDE) < 1 + AMPLITUDE * math.sin(2 * math.pi * (t / DAY_S - 0.25)):
            out.append(t)
    out.sort()
    return out


def stamp(t):
    us = int(round(t * 1e6))
    s, us = divmod(us, 1_000_000)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    frac = "" if us == 0 else f".{us:06d}"
    return f"2024-05-12 {h:02d}:{m:02d}:{s:02d}{frac}+00:00"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--source", default="../shared/traces/azure_llm_2023_conv.head2000.csv")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    pool = lengths(a.source)
    out = sys.stdout
    out.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
    for t in arrival_times(a.requests, rng):
        p, g = pool[rng.randrange(len(pool))]
        out.write(f"{stamp(t)},{p},{g}\n")


if __name__ == "__main__":
    main()
