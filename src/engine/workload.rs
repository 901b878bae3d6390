//! Synthetic traffic: Poisson arrivals under a piecewise rate schedule, or a closed loop of
//! clients (`vllm bench serve --max-concurrency`), weighted user classes, log-normal prompt and
//! output lengths fitted to a mean and a p99, and trace replay (the rows are read by
//! `formats::trace`).
//!
//! Every draw comes from one seeded RNG in a fixed order (`WorkloadRng`: ChaCha8, whose stream
//! its crate keeps the same across versions, with an explicit conversion to floats), and every transcendental function comes
//! from `libm`, so the same seed produces the same requests bit for bit on native and wasm.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

pub use super::alloc::PromptBlocks;

/// The workload's random numbers: ChaCha8 keyed by the seed (SplitMix64 expands the 64-bit seed
/// to the 256-bit key), each uniform rand's `StandardUniform` f64: the top 53 bits of one `u64`
/// over 2^53 (`uniform_is_the_top_53_bits_over_2_pow_53` pins it, so a rand release that drew
/// floats otherwise would fail a test, not move every digest silently).
#[derive(Clone, Debug)]
pub struct WorkloadRng(ChaCha8Rng);

impl WorkloadRng {
    pub fn new(seed: u64) -> WorkloadRng {
        let mut key = [0u8; 32];
        let mut state = seed;
        for chunk in key.chunks_exact_mut(8) {
            state = super::alloc::ids::splitmix64(state);
            chunk.copy_from_slice(&state.to_le_bytes());
        }
        WorkloadRng(ChaCha8Rng::from_seed(key))
    }

    /// A uniform draw from [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0.random::<f64>()
    }
}

/// z-score of the 99th percentile of a standard normal.
const Z99: f64 = 2.326_347_874_040_841;

/// A length distribution given as a mean and a 99th percentile, drawn as a log-normal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LengthDist {
    pub mean: f64,
    pub p99: f64,
}

impl LengthDist {
    /// (mu, sigma) of the log-normal with this mean and p99, or why none exists.
    pub fn lognormal_params(&self) -> Result<(f64, f64), String> {
        if self.mean.is_nan() || self.mean < 1.0 || !self.mean.is_finite() {
            return Err("mean must be at least 1 token".into());
        }
        if !self.p99.is_finite() || self.p99 < self.mean {
            return Err(format!(
                "p99 ({}) must be at least the mean ({})",
                super::numbers::show_number(self.p99),
                super::numbers::show_number(self.mean)
            ));
        }
        if self.p99 == self.mean {
            return Ok((libm::log(self.mean), 0.0));
        }
        // mean = exp(mu + s²/2), p99 = exp(mu + Z99·s)  ⇒  s² − 2·Z99·s + 2·ln(p99/mean) = 0.
        let d = libm::log(self.p99) - libm::log(self.mean);
        let disc = Z99 * Z99 - 2.0 * d;
        if disc < 0.0 {
            return Err(format!(
                "p99 is too far above the mean for a log-normal (at most {:.1}× the mean)",
                libm::exp(Z99 * Z99 / 2.0)
            ));
        }
        let sigma = Z99 - libm::sqrt(disc);
        Ok((libm::log(self.mean) - sigma * sigma / 2.0, sigma))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct UserClass {
    pub name: String,
    pub weight: f64,
    pub prompt_tokens: LengthDist,
    pub output_tokens: LengthDist,
    pub max_tokens: u32,
    /// Samples per request (parallel sampling).
    pub n: u32,
    /// The first tokens of every prompt of this class are one shared system prompt.
    pub shared_prefix_tokens: u32,
    /// Tenants of the class, each with a system prompt of its own (`shared_prefix_tokens` long):
    /// a request comes from one of them, drawn uniformly. 1: one system prompt for the class.
    pub tenants: u32,
}

/// A rate that holds from `start_s` until the next segment starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSegment {
    pub start_us: u64,
    pub rate_per_s: f64,
}

/// A burst raises the arrival rate over a window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Burst {
    pub start_s: f64,
    pub end_s: f64,
    pub rate_per_s: f64,
}

/// One request of a replayed trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRow {
    pub arrival_s: f64,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    pub n: u32,
    /// The trace's prefix-block ids of the prompt (Mooncake, Qwen-Bailian, vLLM's timed trace):
    /// id `i` stands for tokens `[i·B, (i+1)·B)`, `B` being the trace's
    /// `Arrival::Trace::hash_block_tokens`, and equal leading ids mean equal prompt prefixes.
    /// None: the whole prompt is the request's own.
    pub hash_ids: Option<Arc<[u32]>>,
}

impl TraceRow {
    /// A row whose prompt shares nothing.
    pub fn new(arrival_s: f64, prompt_tokens: u32, output_tokens: u32, n: u32) -> TraceRow {
        TraceRow { arrival_s, prompt_tokens, output_tokens, n, hash_ids: None }
    }
}

/// A closed loop's client round trip where a preset does not give one, µs: `vllm bench serve`
/// on the server's host, its last token streamed back, its next request sent over HTTP, parsed
/// and tokenised by vLLM's API server and handed to the engine core (a millisecond or two; a
/// step's length only matters past it: the replacement misses the step that began meanwhile).
pub const DEFAULT_CLIENT_ROUND_TRIP_US: u64 = 2_000;

#[derive(Clone, Debug, PartialEq)]
pub enum Arrival {
    Poisson {
        rate_per_s: f64,
        bursts: Vec<Burst>,
    },
    /// A closed loop, as `vllm bench serve --max-concurrency C --num-prompts N` runs with an
    /// infinite request rate: `max_concurrency` clients, each sending its next request as soon as
    /// its previous one finished or was refused. Requests `0..C` arrive at 0; request `C + k`
    /// arrives `round_trip_us` after the run's `(k + 1)`-th request ends, a time only the
    /// simulation knows (`Simulation` keeps the clients' free times).
    Concurrency {
        max_concurrency: u32,
        num_requests: u32,
        /// From a request's end in the engine to its client's next request reaching the engine:
        /// the last token streamed back, the client's turn, the next request sent, parsed and
        /// tokenised. The engine starts its next step meanwhile, so the replacement joins the
        /// step after.
        round_trip_us: u64,
    },
    /// Rows sorted by arrival, shared (a day of traffic is not copied with the configuration).
    Trace {
        rows: Arc<[TraceRow]>,
        max_tokens: u32,
        /// Tokens each of a row's `hash_ids` stands for (512 in Mooncake, 16 in Qwen-Bailian).
        hash_block_tokens: u32,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadConfig {
    pub arrival: Arrival,
    pub classes: Vec<UserClass>,
}

/// One request as the server receives it. `output_tokens` (one per sample) is hidden from the
/// allocator and scheduler: they learn a sample's length only when it ends.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestSpec {
    pub id: u32,
    /// When it arrives. Under a closed loop (`Arrival::Concurrency`) this is 0, the earliest it
    /// can: its real arrival is known only as the run goes (`SequenceGroup::arrival_us`).
    pub arrival_us: u64,
    pub class: u16,
    pub prompt_tokens: u32,
    pub output_tokens: Vec<u32>,
    pub max_tokens: u32,
    pub shared_prefix_tokens: u32,
    /// Which of its class's tenants sent it (0 where the class has one), whose system prompt
    /// its `shared_prefix_tokens` are.
    pub tenant: u32,
    /// The prompt's blocks as the trace names them, for prefix caching.
    pub prompt_blocks: Option<PromptBlocks>,
}

impl RequestSpec {
    pub fn n(&self) -> u32 {
        self.output_tokens.len() as u32
    }
}

/// The piecewise-constant rate schedule a base rate and its bursts describe (later bursts win).
pub fn rate_schedule(rate_per_s: f64, bursts: &[Burst], duration_us: u64) -> Vec<RateSegment> {
    let mut cuts: Vec<u64> = vec![0];
    for b in bursts {
        cuts.push(secs_to_us(b.start_s).min(duration_us));
        cuts.push(secs_to_us(b.end_s).min(duration_us));
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts.into_iter()
        .filter(|&c| c < duration_us)
        .map(|start_us| {
            let rate = bursts
                .iter()
                .rev()
                .find(|b| secs_to_us(b.start_s) <= start_us && start_us < secs_to_us(b.end_s))
                .map_or(rate_per_s, |b| b.rate_per_s);
            RateSegment { start_us, rate_per_s: rate }
        })
        .collect()
}

pub fn secs_to_us(s: f64) -> u64 {
    libm::round(s * 1e6).max(0.0) as u64
}

/// Draws every request that arrives in `[0, duration_us)` (a closed loop: all its requests,
/// each arriving at 0 as far as this list says).
pub fn generate(workload: &WorkloadConfig, duration_us: u64, seed: u64, max_model_len: u32) -> Vec<RequestSpec> {
    let mut rng = WorkloadRng::new(seed);
    match &workload.arrival {
        Arrival::Trace { rows, max_tokens, hash_block_tokens } => {
            trace_requests(rows, *max_tokens, *hash_block_tokens, duration_us, max_model_len)
        }
        Arrival::Poisson { rate_per_s, bursts } => {
            let schedule = rate_schedule(*rate_per_s, bursts, duration_us);
            let mut times = poisson_times(&schedule, duration_us, &mut rng);
            times.truncate(super::bounds::MAX_ARRIVALS as usize);
            draw_requests(&workload.classes, times, &mut rng, max_model_len)
        }
        Arrival::Concurrency { num_requests, .. } => {
            let count = u64::from(*num_requests).min(super::bounds::MAX_ARRIVALS) as usize;
            draw_requests(&workload.classes, vec![0; count], &mut rng, max_model_len)
        }
    }
}

/// One request per arrival time, in order: its class, then its prompt and its samples' output
/// lengths, drawn from `rng`.
fn draw_requests(
    classes: &[UserClass],
    times: Vec<u64>,
    rng: &mut WorkloadRng,
    max_model_len: u32,
) -> Vec<RequestSpec> {
    let params: Vec<((f64, f64), (f64, f64))> = classes
        .iter()
        .map(|c| {
            (
                c.prompt_tokens.lognormal_params().unwrap_or((0.0, 0.0)),
                c.output_tokens.lognormal_params().unwrap_or((0.0, 0.0)),
            )
        })
        .collect();
    let total_weight: f64 = classes.iter().map(|c| c.weight).sum();
    let mut out = Vec::with_capacity(times.len());
    for (t, id) in times.into_iter().zip(0u32..) {
        let class = pick_class(classes, total_weight, rng);
        let c = &classes[class];
        let (p, o) = params[class];
        let min_prompt = (c.shared_prefix_tokens + 1).min(max_model_len.saturating_sub(1));
        let prompt = draw_lognormal(p, rng).clamp(min_prompt.max(1), max_model_len.saturating_sub(1).max(1));
        let cap = c.max_tokens.min(max_model_len.saturating_sub(prompt)).max(1);
        let outputs = (0..c.n.max(1)).map(|_| draw_lognormal(o, rng).clamp(1, cap)).collect();
        // Drawn only where there is a choice, so classes of one tenant draw what they always did.
        let tenant = if c.tenants > 1 { pick_tenant(c.tenants, rng) } else { 0 };
        out.push(RequestSpec {
            id,
            arrival_us: t,
            class: class as u16,
            prompt_tokens: prompt,
            output_tokens: outputs,
            max_tokens: c.max_tokens,
            shared_prefix_tokens: c.shared_prefix_tokens.min(prompt),
            tenant,
            prompt_blocks: None,
        });
    }
    out
}

/// A trace's rows that arrive within the run, as requests: prompts and outputs clamped to
/// `max_model_len`, every sample of a row with the row's output length.
fn trace_requests(
    rows: &[TraceRow],
    max_tokens: u32,
    hash_block_tokens: u32,
    duration_us: u64,
    max_model_len: u32,
) -> Vec<RequestSpec> {
    rows.iter()
        .filter(|r| secs_to_us(r.arrival_s) < duration_us)
        .enumerate()
        .map(|(i, r)| {
            let prompt = r.prompt_tokens.clamp(1, max_model_len.saturating_sub(1).max(1));
            let cap = max_tokens.min(max_model_len.saturating_sub(prompt)).max(1);
            RequestSpec {
                id: i as u32,
                arrival_us: secs_to_us(r.arrival_s),
                class: 0,
                prompt_tokens: prompt,
                output_tokens: vec![r.output_tokens.clamp(1, cap); r.n.max(1) as usize],
                max_tokens,
                shared_prefix_tokens: 0,
                tenant: 0,
                prompt_blocks: r
                    .hash_ids
                    .as_ref()
                    .map(|ids| PromptBlocks { ids: Arc::clone(ids), block_tokens: hash_block_tokens.max(1) }),
            }
        })
        .collect()
}

fn poisson_times(schedule: &[RateSegment], duration_us: u64, rng: &mut WorkloadRng) -> Vec<u64> {
    let mut times = Vec::new();
    let mut t = 0.0_f64; // seconds
    let end = duration_us as f64 / 1e6;
    for (i, seg) in schedule.iter().enumerate() {
        let seg_end = schedule.get(i + 1).map_or(end, |s| s.start_us as f64 / 1e6);
        t = t.max(seg.start_us as f64 / 1e6);
        if seg.rate_per_s <= 0.0 {
            continue;
        }
        loop {
            // Exponential gaps; memorylessness lets the next segment restart at its boundary.
            let u: f64 = 1.0 - rng.uniform(); // (0, 1]
            let next = t - libm::log(u) / seg.rate_per_s;
            if next >= seg_end {
                t = seg_end;
                break;
            }
            t = next;
            times.push(secs_to_us(t).min(duration_us.saturating_sub(1)));
        }
    }
    times
}

fn pick_class(classes: &[UserClass], total_weight: f64, rng: &mut WorkloadRng) -> usize {
    let mut x = rng.uniform() * total_weight;
    for (i, c) in classes.iter().enumerate() {
        if x < c.weight {
            return i;
        }
        x -= c.weight;
    }
    classes.len() - 1
}

/// The most tenants a class may have (`UserClass::tenants`).
pub const MAX_TENANTS: u32 = 4096;

/// The key of a system prompt: class `class`'s, or its tenant `tenant`'s. Classes of one tenant
/// keep `class + 1`; the key stays below 2^30, as `TokenIdentity::block_content` needs.
pub fn prefix_key(class: u16, tenant: u32) -> u32 {
    (u32::from(class) + 1) + (tenant.min(MAX_TENANTS - 1) << 17)
}

/// One of `tenants`, uniformly.
fn pick_tenant(tenants: u32, rng: &mut WorkloadRng) -> u32 {
    ((rng.uniform() * f64::from(tenants)) as u32).min(tenants - 1)
}

/// One log-normal draw rounded to whole tokens (Box–Muller on two uniforms).
fn draw_lognormal((mu, sigma): (f64, f64), rng: &mut WorkloadRng) -> u32 {
    let u1: f64 = 1.0 - rng.uniform();
    let u2: f64 = rng.uniform();
    let z = libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * std::f64::consts::PI * u2);
    let x = libm::exp(mu + sigma * z);
    libm::round(x.min(4.0e9)).max(1.0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// rand's `StandardUniform` f64 is the conversion the digests were pinned with.
    #[test]
    fn uniform_is_the_top_53_bits_over_2_pow_53() {
        let mut rng = WorkloadRng::new(7);
        let mut raw = WorkloadRng::new(7).0;
        for _ in 0..1000 {
            let expected = (raw.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
            assert_eq!(rng.uniform().to_bits(), expected.to_bits());
        }
    }
}
