#!/usr/bin/env python3
"""Writes the step-indexed traces under tests/golden/vllm/traces/ (stdlib only, deterministic).

Usage: python3 tests/golden/vllm/gen_traces.py [OUT_DIR]

Columns: arrival_step,prompt_tokens,output_tokens[,prefix_id,prefix_tokens][,n]
- prompt_tokens counts the whole prompt; when prefix_id is set, its first prefix_tokens token ids are
  the ones every row with that prefix_id shares (an empty prefix_id means no shared prefix).
- n (optional, default 1) is the number of parallel samples of the request.
Each scenario draws from its own random.Random(seed), so editing one scenario leaves the others as
they are.
"""
import os
import random
import sys


def decode_heavy(rng):
    """Short prompts, long outputs, requests trickling in; the pool never runs short."""
    rows = []
    for i in range(48):
        rows.append((rng.randint(0, 40), rng.randint(32, 256), rng.randint(128, 384)))
    return rows


def long_prompts(rng):
    """Long prompts and short answers: the chunked-prefill traces (budgets 512 and 2048)."""
    rows = []
    for i in range(24):
        rows.append((rng.randint(0, 30), rng.randint(1500, 6000), rng.randint(16, 96)))
    return rows


def preemption_storm(rng):
    """Many requests arrive at once and grow long outputs in a small pool: recompute preemptions."""
    rows = []
    for i in range(64):
        rows.append((rng.randint(0, 10), rng.randint(64, 256), rng.randint(200, 600)))
    return rows


def shared_prefix(rng):
    """Four system prompts shared by many requests, each with its own user turn."""
    system = [rng.randint(400, 1500) for _ in range(4)]
    rows = []
    for i in range(120):
        pid = rng.randrange(4)
        user = rng.randint(20, 200)
        rows.append((rng.randint(0, 100), system[pid] + user, rng.randint(20, 120), pid, system[pid]))
    return rows


def burst_mixed(rng):
    """A trickle of mixed-length requests, then a burst of 80 at step 50."""
    def one(step):
        if rng.random() < 0.7:
            prompt = rng.randint(16, 128)
        else:
            prompt = rng.randint(1000, 3000)
        return (step, prompt, rng.randint(8, 400))

    rows = [one(rng.randint(0, 120)) for _ in range(30)]
    rows += [one(50) for _ in range(80)]
    return rows


def n4_sampling(rng):
    """Requests asking for four samples each (vLLM v1 fans them out into child requests)."""
    rows = []
    for i in range(32):
        rows.append((rng.randint(0, 40), rng.randint(100, 600), rng.randint(50, 200), "", 0, 4))
    return rows


def held_out_mix(rng):
    """Everything at once in a tight pool: shared prefixes, n in {1, 2}, chunked prefill at 512.
    Not used to tune the engine (the issue's "traces you did not tune on")."""
    system = [rng.randint(200, 900) for _ in range(3)]
    rows = []
    for i in range(90):
        n = 2 if rng.random() < 0.25 else 1
        if rng.random() < 0.6:
            pid = rng.randrange(3)
            prompt = system[pid] + rng.randint(10, 300)
            rows.append((rng.randint(0, 60), prompt, rng.randint(10, 300), pid, system[pid], n))
        else:
            rows.append((rng.randint(0, 60), rng.randint(30, 1200), rng.randint(10, 300), "", 0, n))
    return rows


def sliding_window(rng):
    """Long prompts and long answers on a Gemma-2-like model (a window on every even layer) in a
    pool too small for both groups to keep every token: the window's blocks are freed as decode
    goes on, and preemption still comes."""
    rows = []
    for i in range(40):
        rows.append((rng.randint(0, 40), rng.randint(300, 2500), rng.randint(150, 700)))
    return rows


def sliding_held_out(rng):
    """Held out (never tuned on): bursts of mixed lengths on a 128-token window, a tight pool."""
    rows = []
    for i in range(60):
        step = rng.choice([0, 0, 5, 30, 31, 32, 80]) + rng.randint(0, 4)
        if rng.random() < 0.3:
            rows.append((step, rng.randint(1000, 2800), rng.randint(20, 120)))
        else:
            rows.append((step, rng.randint(40, 600), rng.randint(100, 900)))
    return rows


SCENARIOS = [
    ("decode_heavy", decode_heavy, 11, ["arrival_step", "prompt_tokens", "output_tokens"]),
    ("long_prompts", long_prompts, 12, ["arrival_step", "prompt_tokens", "output_tokens"]),
    ("preemption_storm", preemption_storm, 13, ["arrival_step", "prompt_tokens", "output_tokens"]),
    ("shared_prefix", shared_prefix, 14,
     ["arrival_step", "prompt_tokens", "output_tokens", "prefix_id", "prefix_tokens"]),
    ("burst_mixed", burst_mixed, 15, ["arrival_step", "prompt_tokens", "output_tokens"]),
    ("n4_sampling", n4_sampling, 16,
     ["arrival_step", "prompt_tokens", "output_tokens", "prefix_id", "prefix_tokens", "n"]),
    ("held_out_mix", held_out_mix, 17,
     ["arrival_step", "prompt_tokens", "output_tokens", "prefix_id", "prefix_tokens", "n"]),
    ("sliding_window", sliding_window, 18, ["arrival_step", "prompt_tokens", "output_tokens"]),
    ("sliding_held_out", sliding_held_out, 19, ["arrival_step", "prompt_tokens", "output_tokens"]),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "traces")
    os.makedirs(out, exist_ok=True)
    for name, make, seed, header in SCENARIOS:
        rows = make(random.Random(seed))
        # Stable order: by arrival step, ties in draw order (the harness adds a step's rows in file order).
        rows = [r for _, r in sorted(enumerate(rows), key=lambda t: (t[1][0], t[0]))]
        path = os.path.join(out, name + ".csv")
        with open(path, "w") as f:
            f.write(",".join(header) + "\n")
            for r in rows:
                f.write(",".join(str(v) for v in r[: len(header)]) + "\n")
        print(f"{path}: {len(rows)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
