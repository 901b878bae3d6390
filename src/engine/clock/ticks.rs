//! A clock of a fixed cost per step plus a cost per scheduled token: no memory, no GPU. `kvlab
//! replay` runs on one tick (1 µs) per step, so that step `s` of the engine is step `s` of vLLM;
//! tests run on round costs whose latencies can be checked by hand.

use super::work::StepWork;

/// A fixed cost per step and a cost per scheduled token, µs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ticks {
    pub fixed_step_us: f64,
    pub us_per_token: f64,
}

impl Ticks {
    /// A step's duration in whole microseconds (at least 1).
    pub fn step_us(&self, w: &StepWork) -> u64 {
        let us = self.fixed_step_us + w.tokens() as f64 * self.us_per_token;
        (libm::round(us) as u64).max(1)
    }

    /// The sentence a report gives of it.
    pub fn describe(&self) -> String {
        format!("step times not modelled: {} µs a step + {} µs a token", self.fixed_step_us, self.us_per_token)
    }
}
