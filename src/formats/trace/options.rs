//! What to take from a trace once it is read, and in which order:
//!
//! 1. failed rows (BurstGPT: 0 response or 0 request tokens) are dropped and counted when
//!    `drop_failed` is on (the default), refused otherwise, when the rows are read;
//! 2. rows are sorted by arrival (stable: ties keep the file's order) and arrivals made relative
//!    to the trace's first request (the kvlab format keeps its own zero);
//! 3. the window `[start_s, end_s)` is kept and shifted so that `start_s` is 0;
//! 4. arrivals are divided by `speed`;
//! 5. one request in `sample_one_in` is kept, by a hash of its session key;
//! 6. one replica's share `replica.index` of `replica.of` is kept, by another hash of that key.
//!
//! A session's turns share one key (Qwen-Bailian: the root `chat_id` of its `parent_chat_id`
//! chain; BurstGPT 3 and BLIS: their session id when present; otherwise the row's ordinal in the
//! file), so sampling and replicas keep a conversation together. The hash is the engine's
//! `splitmix64`; sampling and replicas are salted apart, so they are independent.

use serde::{Deserialize, Serialize};

use super::rows::TraceFormat;
use crate::engine::alloc::splitmix64;

/// One replica's share of a fleet: requests whose session hash falls on `index` of `of`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replica {
    pub index: u32,
    pub of: u32,
}

/// The reader's options; `TraceOptions::default()` reads the whole file as it is.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceOptions {
    pub format: TraceFormat,
    pub start_s: f64,
    pub end_s: Option<f64>,
    pub speed: f64,
    pub sample_one_in: u32,
    pub replica: Option<Replica>,
    pub drop_failed: bool,
    /// vllm-timed: seconds per unit of `timestamp` (vLLM's `--timed-trace-sec-multiplier`).
    pub seconds_per_unit: f64,
    /// vllm-timed: tokens per hash id (vLLM's `--timed-trace-chunk-hash-size`).
    pub hash_block_tokens: u32,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions {
            format: TraceFormat::Auto,
            start_s: 0.0,
            end_s: None,
            speed: 1.0,
            sample_one_in: 1,
            replica: None,
            drop_failed: true,
            seconds_per_unit: 1.0,
            hash_block_tokens: 16,
        }
    }
}

/// An option out of its range: `option` is its preset key (`speed`, `replica.index`, …).
#[derive(Clone, Debug, PartialEq)]
pub struct OptionError {
    pub option: &'static str,
    pub message: String,
}

/// The largest `speed`, `sample_one_in` and `replica.of` accepted.
pub const MAX_SPEED: f64 = 1_000_000.0;
pub const MAX_SAMPLE_ONE_IN: u32 = 1_000_000;
pub const MAX_REPLICAS: u32 = 100_000;
pub const MAX_HASH_BLOCK_TOKENS: u32 = 1 << 20;

const SAMPLE_SALT: u64 = 0x5A4D_504C_4531_494E; // "SMPLE1IN"
const REPLICA_SALT: u64 = 0x5245_504C_4943_4153; // "REPLICAS"

impl TraceOptions {
    /// Every option in its range, or the first that is not.
    pub fn validate(&self) -> Result<(), OptionError> {
        let err = |option, message: String| Err(OptionError { option, message });
        if !self.start_s.is_finite() || self.start_s < 0.0 {
            return err("start_s", format!("must be a number of seconds ≥ 0, found {}", self.start_s));
        }
        if let Some(end) = self.end_s {
            if end.is_nan() || end <= self.start_s {
                return err("end_s", format!("must be after start_s ({} s), found {end}", self.start_s));
            }
        }
        if !(self.speed.is_finite() && self.speed > 0.0 && self.speed <= MAX_SPEED) {
            return err("speed", format!("must be a factor > 0 and at most {MAX_SPEED}, found {}", self.speed));
        }
        if !(1..=MAX_SAMPLE_ONE_IN).contains(&self.sample_one_in) {
            return err(
                "sample_one_in",
                format!("must be from 1 to {MAX_SAMPLE_ONE_IN}, found {}", self.sample_one_in),
            );
        }
        if let Some(r) = self.replica {
            if !(1..=MAX_REPLICAS).contains(&r.of) {
                return err("replica.of", format!("must be from 1 to {MAX_REPLICAS}, found {}", r.of));
            }
            if r.index >= r.of {
                return err("replica.index", format!("must be from 0 to {} (of − 1), found {}", r.of - 1, r.index));
            }
        }
        if !(self.seconds_per_unit.is_finite() && self.seconds_per_unit > 0.0) {
            return err("seconds_per_unit", format!("must be > 0, found {}", self.seconds_per_unit));
        }
        if !(1..=MAX_HASH_BLOCK_TOKENS).contains(&self.hash_block_tokens) {
            return err(
                "hash_block_tokens",
                format!("must be from 1 to {MAX_HASH_BLOCK_TOKENS}, found {}", self.hash_block_tokens),
            );
        }
        Ok(())
    }

    /// Whether a request with this session key is kept by the sampling and the replica share.
    pub fn keeps_session(&self, key: u64) -> bool {
        let sampled = self.sample_one_in <= 1 || splitmix64(key ^ SAMPLE_SALT) % u64::from(self.sample_one_in) == 0;
        let ours = self.replica.is_none_or(|r| splitmix64(key ^ REPLICA_SALT) % u64::from(r.of) == u64::from(r.index));
        sampled && ours
    }

    /// Whether a relative arrival falls in the window.
    pub fn in_window(&self, t: f64) -> bool {
        t >= self.start_s && self.end_s.is_none_or(|e| t < e)
    }

    /// A relative arrival in the window, on the window's clock and at the speed.
    pub fn rescale(&self, t: f64) -> f64 {
        let shifted = if self.start_s == 0.0 { t } else { t - self.start_s };
        if self.speed == 1.0 {
            shifted
        } else {
            shifted / self.speed
        }
    }
}

/// A session key from a text id (BurstGPT's `Session ID`, BLIS's `session_id`), kept apart from
/// ordinal keys.
pub fn text_key(s: &str) -> u64 {
    s.bytes().fold(0x7E57_1D00_0000_0000, |h, b| splitmix64(h ^ u64::from(b)))
}

/// The session key of a row that has no session: its ordinal among the file's rows.
pub fn ordinal_key(i: u64) -> u64 {
    splitmix64(i ^ 0x0AD1_0000_0000_0000)
}
