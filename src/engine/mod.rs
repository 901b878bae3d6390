//! The simulation engine: pure and deterministic, the bottom layer of the crate. It knows
//! nothing of the web, the terminal, files, JSON or storage; time is simulated in integer
//! microseconds and all randomness comes from one seeded RNG. The `tidy` test keeps it that way
//! (no web-sys, js-sys, wasm-bindgen, JSON text, files, wall clock, OS randomness or threads in
//! this tree, and no import from a layer above).
#![forbid(unsafe_code)]
// No bare `unwrap`: where the engine relies on an invariant it says which one (`expect("…")`),
// so a broken invariant reads as a sentence, not a line number.
#![deny(clippy::unwrap_used)]

pub mod alloc;
pub mod batch_defaults;
pub mod bounds;
pub mod clock;
pub mod clock_fit;
pub mod config;
pub mod fidelity;
pub mod fleet;
pub mod gpu_fit;
pub mod gpus;
pub mod kv_spec;
pub mod memory_budget;
pub mod memory_map;
pub mod metrics;
pub mod model;
pub mod model_arch;
pub mod numbers;
pub mod offload;
pub mod plan;
pub mod replay;
pub mod request;
pub mod scheduler;
pub mod sim;
pub mod startup_checks;
pub mod sweep;
mod validate;
pub mod version;
pub mod workload;

pub use config::{AllocatorConfig, ConfigError, EngineVersion, PreemptionMode, Reserve, SchedulerConfig, SimConfig};
pub use memory_map::{MapCell, MemoryMap};
pub use metrics::{Report, StepPoint};
pub use sim::observe::RequestView;
pub use sim::{Simulation, Stepping};
pub use validate::{whole_number_range, WHOLE_NUMBER_RANGES};
