//! The random preset generator shared by the fuzzer (`tests/fuzz_presets.rs`, native) and the
//! native-vs-wasm digest check (`tests/determinism.rs` and `tests/web_digests.rs`): every knob of
//! a preset drawn from one seed with splitmix64, so the same seed gives the same preset on every
//! platform. `accepted_case` keeps drawing until the engine accepts a preset within a budget.
#![allow(dead_code)] // each test crate uses part of it

use kvlab::engine::alloc::splitmix64;
use kvlab::formats::preset::parse_preset;
use serde_json::{json, Value};

/// How large a case may be: a drawn preset above any of these is drawn again (it is accepted,
/// just too slow for this run). CI keeps cases small; the soak allows larger ones.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub kv_cells: u64,
    pub max_steps: u64,
    pub requests: u64,
}

pub const CI_BUDGET: Budget = Budget { kv_cells: 20_000, max_steps: 10_000, requests: 400 };
pub const SOAK_BUDGET: Budget = Budget { kv_cells: 40_000, max_steps: 30_000, requests: 1_500 };

/// splitmix64 draws from one case seed.
pub struct Draw(pub u64);

impl Draw {
    pub fn next(&mut self) -> u64 {
        self.0 = splitmix64(self.0);
        self.0
    }
    pub fn below(&mut self, k: u64) -> u64 {
        self.next() % k.max(1)
    }
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    /// A number in [lo, hi) with two decimals.
    pub fn real(&mut self, lo: f64, hi: f64) -> f64 {
        let x = lo + (hi - lo) * (self.below(1 << 20) as f64 / f64::from(1u32 << 20));
        (x * 100.0).round() / 100.0
    }

    /// `text` with 1–4 random edits: a byte replaced, inserted or removed (kept valid UTF-8 by
    /// editing ASCII positions with ASCII bytes, or, sometimes, by inserting any character).
    pub fn mutate(&mut self, text: &str) -> String {
        let mut s: Vec<char> = text.chars().collect();
        for _ in 0..1 + self.below(4) {
            let at = self.below(s.len() as u64 + 1) as usize;
            let c = match self.below(6) {
                0 => char::from_u32(self.below(0x11_0000) as u32).unwrap_or('\u{fffd}'),
                1 => ['"', '{', '}', '[', ']', ',', ':', '-', '.', 'e', '0', '9'][self.below(12) as usize],
                _ => (b' ' + self.below(95) as u8) as char,
            };
            match self.below(3) {
                0 if at < s.len() => s[at] = c,
                1 if at < s.len() => {
                    s.remove(at);
                }
                _ => s.insert(at, c),
            }
        }
        s.into_iter().collect()
    }

    /// `text` with 1–3 of its digits changed to other digits (JSON stays JSON).
    pub fn change_digits(&mut self, text: &str) -> String {
        let mut s: Vec<char> = text.chars().collect();
        let digits: Vec<usize> = (0..s.len()).filter(|&i| s[i].is_ascii_digit()).collect();
        for _ in 0..1 + self.below(3) {
            if let Some(&at) = digits.get(self.below(digits.len() as u64) as usize) {
                s[at] = (b'0' + self.below(10) as u8) as char;
            }
        }
        s.into_iter().collect()
    }
}

const MODELS: [&str; 5] = ["llama-3-8b", "llama-3-70b", "mistral-7b", "opt-13b", "llama-2-7b"];
const GPUS: [&str; 4] = ["a100-80gb", "h100-sxm", "h200", "l4"];
const CALIBRATIONS: [Option<&str>; 4] = [None, None, Some("host-xeon-2core"), Some("cuda-nvidia-h200")];

/// KV bytes per token of a model spec (JSON) at a dtype, as the engine counts them.
fn bytes_per_token(model: &Value, fp8: bool) -> u64 {
    let (layers, heads, dim) = match model {
        Value::String(id) => match id.as_str() {
            "llama-3-70b" => (80, 8, 128),
            "opt-13b" => (40, 40, 128),
            "llama-2-7b" => (32, 32, 128),
            _ => (32, 8, 128),
        },
        m => (
            m["layers"].as_u64().unwrap_or(1),
            m["kv_heads"].as_u64().unwrap_or(1),
            m["head_dim"].as_u64().unwrap_or(1),
        ),
    };
    2 * layers * heads * dim * if fp8 { 1 } else { 2 }
}

/// One random preset (not necessarily accepted) drawn from `seed`.
pub fn draw_preset(seed: u64) -> Value {
    let mut d = Draw(seed);
    let duration_s = d.pick(&[1.0, 1.5, 2.0, 3.0, 5.0, 8.0]);
    let model = if d.chance(35) {
        json!({
            "name": "fuzz",
            "layers": d.pick(&[1, 2, 4, 16, 32, 80]),
            "kv_heads": d.pick(&[1, 2, 8, 32]),
            "head_dim": d.pick(&[2, 16, 64, 128, 256]),
            "params_b": d.pick(&[0.01, 0.1, 1.0, 7.0, 70.0]),
        })
    } else {
        json!(d.pick(&MODELS))
    };
    let fp8 = d.chance(40);
    let bpt = bytes_per_token(&model, fp8);
    let paged = d.chance(60);
    let block_size: u64 = d.pick(&[1, 2, 4, 8, 16, 16, 32, 64, 128, 256]);
    let allocator = if paged {
        json!({ "kind": "paged", "block_size": block_size, "prefix_caching": d.chance(40) })
    } else {
        json!({
            "kind": "contiguous",
            "reserve": d.pick(&["prompt_plus_max_tokens", "max_model_len"]),
            "fit": d.pick(&["first_fit", "best_fit"]),
        })
    };
    // The pool as a number of tokens, turned into GiB of this model's tokens.
    let tokens: u64 = d.pick(&[256, 1_000, 3_000, 8_000, 20_000, 60_000]);
    let kv_memory_gib = ((tokens * bpt) as f64 / f64::from(1u32 << 30) * 1e4).ceil().max(100.0) / 1e4;
    let max_model_len: u64 = d.pick(&[64, 256, 1_024, 2_048, 4_096, 8_192]);
    let chunked = d.chance(40);
    let max_num_seqs: u64 = d.pick(&[1, 2, 4, 8, 32, 128, 256]);
    let scheduler = json!({
        "max_num_seqs": max_num_seqs,
        "max_num_batched_tokens": d.pick(&[16, 256, 1_024, 2_048, 8_192]),
        "preemption": d.pick(&["recompute", "swap"]),
        "swap_space_gib": d.pick(&[0.0, 0.001, 0.01, 0.1, 4.0]),
        "max_model_len": max_model_len,
        "chunked_prefill": chunked,
        "watermark": d.pick(&[0.0, 0.01, 0.05, 0.2]),
    });
    let mut scheduler = scheduler;
    // Which vLLM scheduler (v1 refuses swap and, without chunked prefill, a budget below
    // max_model_len: those draws are refused and drawn again). Left out, the default (v1).
    match d.below(3) {
        0 => scheduler["engine"] = json!("v0"),
        1 => scheduler["engine"] = json!("v1"),
        _ => {}
    }
    let workload = if d.chance(8) {
        let rows = d.below(40);
        let mut csv = String::from("arrival_s,prompt_tokens,output_tokens,n\n");
        for _ in 0..rows {
            let arrival = d.real(0.0, duration_s + 1.0);
            let prompt_max = d.pick(&[16, 500, 3_000]);
            let prompt = 1 + d.below(prompt_max);
            let output_max = d.pick(&[4, 200, 2_000]);
            let output = 1 + d.below(output_max);
            let n = d.pick(&[1, 1, 2, 4]);
            csv.push_str(&format!("{arrival},{prompt},{output},{n}\n"));
        }
        json!({ "arrival": { "kind": "trace", "csv": csv, "max_tokens": d.pick(&[1, 16, 256, 2_048]).min(max_model_len) } })
    } else {
        let rate = d.pick(&[0.0, 0.5, 2.0, 8.0, 30.0, 100.0]);
        let bursts: Vec<Value> = (0..d.pick(&[0, 0, 1, 2, 3]))
            .map(|_| {
                let start = d.real(0.0, duration_s);
                let end = d.real(start, duration_s);
                json!({ "start_s": start, "end_s": end.max(start), "rate_per_s": d.pick(&[0.0, 5.0, 50.0, 200.0]) })
            })
            .collect();
        let classes: Vec<Value> = (0..1 + d.below(3))
            .map(|i| {
                let prompt = d.pick(&[1.0, 8.0, 64.0, 300.0, 1_000.0, 3_000.0]);
                let output = d.pick(&[1.0, 16.0, 128.0, 500.0]);
                json!({
                    "name": format!("class{i}"),
                    "weight": d.pick(&[0.1, 1.0, 3.0, 10.0]),
                    "prompt_tokens": { "mean": prompt, "p99": prompt * d.pick(&[1.0, 1.5, 3.0, 10.0]) },
                    "output_tokens": { "mean": output, "p99": output * d.pick(&[1.0, 2.0, 5.0]) },
                    "max_tokens": d.pick(&[1, 16, 256, 2_048]),
                    "n": d.pick(&[1, 1, 1, 2, 4, 16]),
                    "shared_prefix_tokens": d.pick(&[0, 0, 16, 100, 1_000]),
                })
            })
            .collect();
        json!({ "arrival": { "kind": "poisson", "rate_per_s": rate, "bursts": bursts }, "classes": classes })
    };
    let mut preset = json!({
        "schema": "kvlab/preset@1",
        "id": format!("fuzz-{seed:016x}"),
        "seed": d.next(),
        "duration_s": duration_s,
        "model": model,
        "kv_dtype": if fp8 { "fp8" } else { "fp16" },
        "gpu": d.pick(&GPUS),
        "kv_memory_gib": kv_memory_gib,
        "allocator": allocator,
        "scheduler": scheduler,
        "workload": workload,
    });
    if let Some(c) = d.pick(&CALIBRATIONS) {
        preset["calibration"] = json!(c);
    }
    preset
}

/// The first accepted preset within `budget` drawn from `seed`'s stream, as JSON text, and how
/// many drawn presets were refused on the way.
pub fn accepted_case(seed: u64, budget: Budget) -> (String, u64) {
    let mut refused = 0;
    for attempt in 0u64.. {
        let text = draw_preset(splitmix64(seed ^ attempt.wrapping_mul(0x9e37_79b9_7f4a_7c15))).to_string();
        match parse_preset(&text) {
            Ok(c) => {
                let b = c.run_bounds();
                if b.kv_cells <= budget.kv_cells
                    && b.max_steps <= budget.max_steps
                    && b.expected_requests <= budget.requests
                {
                    return (text, refused);
                }
            }
            Err(_) => refused += 1,
        }
    }
    unreachable!("the draw loop only ends by returning")
}

/// The native-vs-wasm digest check: this many random accepted presets, from this seed, within
/// this budget (small, so the wasm debug build in Chromium runs them in seconds).
pub const DIGEST_CASES: u64 = 200;
pub const DIGEST_SEED: u64 = 0x6b76_6c61_6200_0200;
pub const DIGEST_BUDGET: Budget = Budget { kv_cells: 5_000, max_steps: 3_000, requests: 150 };

/// Case `i` of the digest check: its key in tests/golden/random_digests.json and its preset.
pub fn digest_case(i: u64) -> (String, String) {
    (format!("{i:03}"), accepted_case(splitmix64(DIGEST_SEED.wrapping_add(i)), DIGEST_BUDGET).0)
}
