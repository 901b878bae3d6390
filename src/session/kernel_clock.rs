//! The kernel clock in the lab. A preset with `clock: "kernels"` is priced from its GPU's
//! measured kernels (`formats::kernel_tables`). Native builds carry every covered GPU's tables;
//! the page's full module fetches `kernels/<gpu>.json` the first time a run needs it
//! ([`Lab::kernel_tables_wanted`]), and until the file arrives, or where the fetch failed, the
//! run is priced on the roofline and says so ([`ClockNote`]).

use crate::engine::SimConfig;
use crate::formats::preset::PresetDto;

use super::lab::Lab;

/// What a run that asked for the kernel tables and runs on the roofline says of its clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockNote {
    /// The GPU whose tables the page is fetching; None once the fetch failed.
    pub waiting_for: Option<String>,
    pub text: String,
}

/// The note of a run of `preset` simulated under `config`: None where the run is priced as its
/// preset asks.
pub fn clock_note(preset: &PresetDto, config: &SimConfig) -> Option<ClockNote> {
    #[cfg(feature = "kernel-clock")]
    {
        use crate::formats::kernel_tables::{tables_at_hand, TablesAtHand};
        use crate::formats::preset::ClockDto;
        if preset.clock != ClockDto::Kernels || config.kernels.is_some() {
            return None;
        }
        let gpu = &config.gpu;
        match tables_at_hand(&gpu.id) {
            TablesAtHand::Missing => Some(ClockNote {
                waiting_for: Some(gpu.id.clone()),
                text: format!(
                    "Fetching the {}'s measured kernel tables: until they arrive, these figures are the roofline's.",
                    gpu.name
                ),
            }),
            TablesAtHand::Failed(why) => Some(ClockNote {
                waiting_for: None,
                text: format!(
                    "The {}'s kernel tables could not be loaded ({why}): these figures are the roofline's. Reload the page to try again.",
                    gpu.name
                ),
            }),
            // Attached when the preset was read (`kernel_tables::ask_for_kernels`).
            TablesAtHand::Ready(_) => None,
        }
    }
    #[cfg(not(feature = "kernel-clock"))]
    {
        let _ = (preset, config);
        None
    }
}

impl Lab {
    /// The GPU whose kernel tables a run waits for, which the page fetches.
    pub fn kernel_tables_wanted(&self) -> Option<String> {
        self.runs.iter().find_map(|r| clock_note(&r.preset, &r.config)?.waiting_for)
    }

    /// The runs' clock notes, one per distinct text.
    pub fn clock_notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = Vec::new();
        for note in self.runs.iter().filter_map(|r| clock_note(&r.preset, &r.config)) {
            if !notes.contains(&note.text) {
                notes.push(note.text);
            }
        }
        notes
    }
}

#[cfg(all(feature = "kernel-clock", target_arch = "wasm32"))]
impl super::dispatch::Session {
    /// The page fetched `kernels/<gpu_id>.json` (`Ok` its text) or could not (`Err` why): the
    /// runs are built again, on the tables where they read, else on the roofline with a note
    /// that says why. An error is the state's refusal on the tables (a model they cannot price).
    pub fn kernel_tables_fetched(&mut self, gpu_id: &str, file: Result<&str, &str>) -> Result<(), String> {
        match file {
            Ok(text) => crate::formats::kernel_tables::fetched(gpu_id, text),
            Err(why) => crate::formats::kernel_tables::fetch_failed(gpu_id, why),
        }
        self.lab.rebuild_runs()
    }
}
