//! The largest run the engine accepts, stated as numbers: KV blocks or memory-map cells, requests,
//! steps and series points. `check` (called by `SimConfig::validate`, so the CLI and the page refuse with the same words)
//! refuses a configuration above a limit before anything is allocated, naming the fields to
//! change. Within the limits every structure the engine keeps is bounded (`docs/SCHEMA.md`,
//! "Limits", gives the memory they imply), and every count fits the `u32` fields that hold it.

/// Token slots a contiguous pool's memory-map cell covers (`sim::CONTIGUOUS_CELL_TOKENS`; this
/// file imports nothing of the engine, so that `config` can call it, and `tests/bounds.rs`
/// checks the two agree).
pub const MAP_CELL_TOKENS: u64 = 16;
/// Most paged blocks, or memory-map cells of a contiguous pool (16 tokens each), in one run.
pub const MAX_KV_CELLS: u64 = 1 << 20;
/// Most token slots of a contiguous pool: `MAX_KV_CELLS` map cells.
pub const MAX_CONTIGUOUS_TOKENS: u64 = MAX_KV_CELLS * MAP_CELL_TOKENS;
/// Most requests one run expects: the Poisson mean over the run, or the trace rows within it
/// (a day of one replica's production traffic is about a million).
pub const MAX_REQUESTS: u64 = 2_000_000;
/// Most samples (parallel sampling: `n` per request) one run expects.
pub const MAX_SAMPLES: u64 = 4_000_000;
/// Hard cap on the requests the workload generator draws (a Poisson count of mean
/// `MAX_REQUESTS` stays below it with overwhelming probability, so it never cuts an accepted run).
pub const MAX_ARRIVALS: u64 = MAX_REQUESTS + MAX_REQUESTS / 5;
/// Most scheduler steps in one run: the duration over the shortest step the timing model takes
/// (a day of steps of 4.3 ms and more).
pub const MAX_STEPS: u64 = 20_000_000;
/// Most clients of a closed loop (`workload.arrival.max_concurrency`): far above any server's
/// `max_num_seqs` (4,096 at most), so that every client's request can be waiting at once.
pub const MAX_CONCURRENCY: u64 = 1 << 16;
/// How long a run with `until_all_finished` may go on past `duration_s`, simulated µs (24 h), and
/// never past `MAX_STEPS` of the shortest step (`SimConfig::end_limit_us`): a run that has not
/// drained by then ends there, its unfinished requests counted as running or waiting.
pub const MAX_DRAIN_US: u64 = 24 * 3600 * 1_000_000;
/// Most points of the step series: one per step and idle gap up to this many, then one per time
/// bucket (`metrics::Series`); the copy here keeps this file free of engine imports, and
/// `tests/bounds.rs` checks the two agree.
pub const MAX_SERIES_POINTS: u64 = 1 << 18;

/// What one configuration can reach at most (`SimConfig::run_bounds`), with what a refusal
/// quotes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunBounds {
    /// Paged blocks, or contiguous memory-map cells.
    pub kv_cells: u64,
    /// Token slots of the pool.
    pub capacity_tokens: u64,
    /// The paged allocator's block size; None for contiguous.
    pub block_size: Option<u32>,
    pub kv_memory_gib: f64,
    pub kv_bytes_per_token: u64,
    /// Expected requests (Poisson mean, rounded up), a closed loop's `num_requests`, or trace
    /// rows inside the run.
    pub expected_requests: u64,
    /// Expected samples: the requests' `n` summed (Poisson and closed loop: the classes' mean `n`).
    pub expected_samples: u64,
    /// Where the requests come from.
    pub traffic: Traffic,
    pub duration_s: f64,
    /// The shortest step the timing model can take, µs (an empty batch).
    pub min_step_us: u64,
    /// Steps the run can take at most: `ceil(end / min_step_us)`, the end being `duration_s` or,
    /// with `until_all_finished`, `SimConfig::end_limit_us`.
    pub max_steps: u64,
}

/// Where a run's requests come from (what a refusal tells the learner to change).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    Poisson,
    /// A closed loop of clients (`workload.arrival.kind` "concurrency").
    Concurrency,
    /// A trace's rows.
    Trace,
}

/// A refusal: the preset path of the field to change, and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverLimit {
    pub field: &'static str,
    pub message: String,
}

/// `n` for a message: digits with thousands separators below ten million, else "4.6 billion".
pub fn count_words(n: u64) -> String {
    if n >= 1_000_000_000 {
        format!("{:.1} billion", n as f64 / 1e9)
    } else if n >= 10_000_000 {
        format!("{:.1} million", n as f64 / 1e6)
    } else {
        let digits = n.to_string();
        let mut out = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(ch);
        }
        out
    }
}

/// Refuses a run that would pass a limit, naming the fields to change.
pub fn check(b: &RunBounds) -> Result<(), OverLimit> {
    let (gib, bpt) = (b.kv_memory_gib, b.kv_bytes_per_token);
    match b.block_size {
        Some(block_size) if b.kv_cells > MAX_KV_CELLS => {
            return Err(OverLimit {
                field: "kv_memory_gib",
                message: format!(
                    "{gib} GiB of {bpt}-byte tokens is {} {block_size}-token blocks; the lab handles up to {}; use larger blocks (allocator.block_size) or less memory",
                    count_words(b.kv_cells),
                    count_words(MAX_KV_CELLS)
                ),
            });
        }
        None if b.capacity_tokens > MAX_CONTIGUOUS_TOKENS => {
            return Err(OverLimit {
                field: "kv_memory_gib",
                message: format!(
                    "{gib} GiB of {bpt}-byte tokens is {} token slots; the lab handles up to {} in a contiguous pool; use less memory or the paged allocator with larger blocks",
                    count_words(b.capacity_tokens),
                    count_words(MAX_CONTIGUOUS_TOKENS)
                ),
            });
        }
        _ => {}
    }
    let (field, what) = match b.traffic {
        Traffic::Trace => {
            ("workload.arrival", "use fewer trace rows (a time window or 1-in-k sampling) or shorten duration_s")
        }
        Traffic::Poisson => {
            ("workload.arrival.rate_per_s", "lower rate_per_s or the bursts' rates, or shorten duration_s")
        }
        Traffic::Concurrency => ("workload.arrival.num_requests", "lower num_requests"),
    };
    let traffic = [
        (b.expected_requests, MAX_REQUESTS, "requests", ""),
        (b.expected_samples, MAX_SAMPLES, "samples (n per request)", ", or lower n"),
    ];
    if let Some(&(count, limit, unit, also)) = traffic.iter().find(|(count, limit, ..)| count > limit) {
        let run = match b.traffic {
            Traffic::Concurrency => format!("{} requests of this traffic", count_words(b.expected_requests)),
            Traffic::Poisson | Traffic::Trace => format!("{} s of this traffic", b.duration_s),
        };
        return Err(OverLimit {
            field,
            message: format!(
                "{run} is {} {unit}; the lab handles up to {}; {what}{also}",
                count_words(count),
                count_words(limit)
            ),
        });
    }
    if b.max_steps > MAX_STEPS {
        return Err(OverLimit {
            field: "duration_s",
            message: format!(
                "{} s of steps as short as {} µs is up to {} steps; the lab handles up to {}; shorten duration_s, or use a larger model or a calibration with a larger fixed_step_us",
                b.duration_s,
                b.min_step_us,
                count_words(b.max_steps),
                count_words(MAX_STEPS)
            ),
        });
    }
    Ok(())
}
