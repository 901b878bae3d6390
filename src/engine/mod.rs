//! The simulation engine: pure and deterministic. It knows nothing of the web or the terminal;
//! time is simulated in integer microseconds and all randomness comes from one seeded RNG.
//! The `tidy` test keeps it that way (no web-sys, js-sys, wasm-bindgen, wall clock, OS
//! randomness or threads in this tree).
#![forbid(unsafe_code)]

pub mod alloc;
pub mod backend;
pub mod calibrations;
pub mod config;
pub mod memory_budget;
pub mod memory_map;
pub mod metrics;
pub mod mission;
pub mod model;
pub mod plan;
pub mod preset;
pub mod request;
pub mod scheduler;
pub mod sim;
pub mod stars;
pub mod startup_checks;
pub mod timing;
pub mod workload;

pub use config::{AllocatorConfig, ConfigError, PreemptionMode, Reserve, SchedulerConfig, SimConfig};
pub use memory_map::{MapCell, MemoryMap};
pub use metrics::{Report, StepSample};
pub use sim::{RequestView, Simulation};
