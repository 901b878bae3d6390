//! One run of the lab: a preset simulated to the time shown, on one replica (a `Simulation`
//! with its checkpoints for going back) or, in the full lab, on a fleet of replicas behind a
//! router (`fleet_run`). What the page draws of a run (its maps, its chart, its report) is
//! asked of the run, whichever it is. Also the page's limits on what a run may be, and the
//! allocator's title above its map.

use crate::engine::plan::group_thousands;
use crate::engine::sim::checkpoints::{Checkpoints, DEFAULT_BUDGET_BYTES};
use crate::engine::workload::Arrival;
use crate::engine::{AllocatorConfig, Report, SimConfig, Simulation, StepPoint};
use crate::formats::preset::{AllocatorDto, FitDto, PresetDto, ReserveDto};

#[cfg(feature = "fleet")]
use super::fleet_run::FleetRun;

/// One simulation of one preset, with the longest series seen so far for the chart.
pub struct Run {
    /// "contiguous" or "paged".
    pub label: &'static str,
    pub title: String,
    pub preset: PresetDto,
    pub config: SimConfig,
    engine: Engine,
    target_us: u64,
    pub class_names: Vec<String>,
    /// Where the run ends, once it has been simulated that far (a run with `until_all_finished`
    /// ends when its last request finishes; going back in time keeps what was learned).
    known_end_us: Option<u64>,
}

/// What simulates a run. A run is made once per setup, so the fleet's box costs nothing that
/// matters, and the common run stays inline.
#[allow(clippy::large_enum_variant)]
enum Engine {
    /// One replica, with snapshots of it so going back in time replays from the nearest one.
    One { sim: Simulation, checkpoints: Checkpoints },
    /// Replicas behind a router (`replicas` above 1).
    #[cfg(feature = "fleet")]
    Fleet(Box<FleetRun>),
}

/// How long a run shows as being: `duration_s`; with `until_all_finished`, its end once it is
/// done, and until then `duration_s` or the time simulated so far, whichever is later (the
/// chart's axis and the time slider grow with the run).
pub fn shown_end_us(sim: &Simulation) -> u64 {
    shown_end(sim.config(), sim.is_done(), sim.end_us(), sim.now_us())
}

fn shown_end(config: &SimConfig, done: bool, end_us: u64, now_us: u64) -> u64 {
    if !config.until_all_finished {
        config.duration_us()
    } else if done {
        end_us
    } else {
        config.duration_us().max(now_us)
    }
}

impl Run {
    pub fn new(preset: PresetDto) -> Result<Run, String> {
        let config = preset.to_config().map_err(|e| e.to_string())?;
        check_page_limits(&config)?;
        let engine = Engine::new(&config)?;
        let paged = matches!(preset.allocator, AllocatorDto::Paged { .. });
        Ok(Run {
            label: if paged { "paged" } else { "contiguous" },
            title: allocator_title(&preset.allocator, &config),
            class_names: preset.workload.classes.iter().map(|c| c.name.clone()).collect(),
            preset,
            config,
            engine,
            target_us: 0,
            known_end_us: None,
        })
    }

    /// Whether `config` would run in the lab (what [`Run::new`] checks), building nothing that
    /// simulates.
    pub fn check(config: SimConfig) -> Result<(), String> {
        check_page_limits(&config)?;
        #[cfg(feature = "fleet")]
        if config.replicas > 1 {
            return config.validate().map_err(|e| e.to_string());
        }
        Simulation::new(config).map(drop).map_err(|e| e.to_string())
    }

    /// The simulations the page draws a map of: the run's one, or each replica of its fleet.
    pub fn panels(&self) -> &[Simulation] {
        match &self.engine {
            Engine::One { sim, .. } => std::slice::from_ref(sim),
            #[cfg(feature = "fleet")]
            Engine::Fleet(f) => f.fleet().replicas(),
        }
    }

    /// The fleet, when the run is one.
    #[cfg(feature = "fleet")]
    pub fn fleet(&self) -> Option<&FleetRun> {
        match &self.engine {
            Engine::Fleet(f) => Some(f),
            Engine::One { .. } => None,
        }
    }

    pub fn now_us(&self) -> u64 {
        match &self.engine {
            Engine::One { sim, .. } => sim.now_us(),
            #[cfg(feature = "fleet")]
            Engine::Fleet(f) => f.fleet().now_us(),
        }
    }

    fn is_done(&self) -> bool {
        match &self.engine {
            Engine::One { sim, .. } => sim.is_done(),
            #[cfg(feature = "fleet")]
            Engine::Fleet(f) => f.fleet().is_done(),
        }
    }

    /// Tokens of KV the run's pools hold together.
    pub fn capacity_tokens(&self) -> u64 {
        self.panels().iter().map(|s| s.kv().capacity_tokens()).sum()
    }

    /// How long this run shows as being (`shown_end_us`), its end once it was reached.
    pub fn shown_end_us(&self) -> u64 {
        let end = || self.panels().iter().map(Simulation::end_us).max().unwrap_or(0);
        self.known_end_us.unwrap_or_else(|| shown_end(&self.config, self.is_done(), end(), self.now_us()))
    }

    /// Where time can go in this run: its end when known, else its latest possible end.
    pub fn end_limit_us(&self) -> u64 {
        self.known_end_us.unwrap_or_else(|| self.panels()[0].end_limit_us())
    }

    /// The run's end is known: it was reached, or it is `duration_s`.
    pub fn end_known(&self) -> bool {
        self.known_end_us.is_some() || !self.config.until_all_finished
    }

    fn note_end(&mut self) {
        if self.known_end_us.is_none() && self.is_done() {
            let end = self.panels().iter().map(Simulation::end_us).max().unwrap_or(0);
            self.known_end_us = Some(end);
        }
    }

    pub fn is_paged(&self) -> bool {
        self.label == "paged"
    }

    /// Brings the simulation to `t_us` (from the nearest checkpoint when that is earlier).
    pub fn seek(&mut self, t_us: u64) {
        self.target_us = t_us;
        match &mut self.engine {
            Engine::One { sim, checkpoints } => checkpoints.seek(sim, t_us),
            #[cfg(feature = "fleet")]
            Engine::Fleet(f) => f.seek(t_us),
        }
        self.note_end();
    }

    /// One engine step (a fleet's next event); the new time becomes the target.
    pub fn step(&mut self) {
        self.target_us = match &mut self.engine {
            Engine::One { sim, .. } => {
                sim.step();
                sim.now_us()
            }
            #[cfg(feature = "fleet")]
            Engine::Fleet(f) => f.step(),
        };
        self.note_end();
    }

    /// The run's whole series so far: its simulation's, or its fleet's replicas merged.
    pub fn series(&self) -> &[StepPoint] {
        match &self.engine {
            Engine::One { sim, .. } => sim.series(),
            #[cfg(feature = "fleet")]
            Engine::Fleet(f) => f.series(),
        }
    }

    /// What the chart draws: the series up to the time shown, never beyond it (after going
    /// back in time the run is simulated again from 0, and the chart shows no future).
    /// A step that ends past the time shown (a long prefill) is left out until the time reaches it.
    pub fn chart_series(&self) -> &[StepPoint] {
        let series = self.series();
        &series[..series.partition_point(|p| p.t_us <= self.target_us)]
    }

    pub fn report(&self) -> Report {
        match &self.engine {
            Engine::One { sim, .. } => sim.report(),
            #[cfg(feature = "fleet")]
            Engine::Fleet(f) => f.fleet().report(),
        }
    }

    /// Whether its steps are priced from measured kernels (`clock: "kernels"` with its GPU's
    /// tables at hand).
    #[cfg(feature = "kernel-clock")]
    pub fn on_kernels(&self) -> bool {
        self.config.kernels.is_some()
    }

    pub fn last_sample(&self) -> Option<&StepPoint> {
        self.series().last()
    }

    /// Why requests wait at the time shown, when the head of the queue was not admitted in the
    /// last step: the reason in the learner's words (the metrics panel shows it); in a fleet,
    /// the first replica's that has one.
    pub fn queue_note(&self) -> Option<String> {
        #[cfg(feature = "fleet")]
        if self.fleet().is_some() {
            return self.panels().iter().enumerate().find_map(|(i, sim)| {
                queue_note(sim, &self.config, self.is_paged()).map(|note| format!("Replica {}: {note}", i + 1))
            });
        }
        queue_note(&self.panels()[0], &self.config, self.is_paged())
    }
}

/// One map the page draws: a run's simulation, or one replica of a fleet run.
pub struct Panel<'a> {
    pub run: &'a Run,
    /// The replica's index, in a fleet.
    pub replica: Option<usize>,
    pub sim: &'a Simulation,
}

impl Panel<'_> {
    /// The map's title: the run's allocator, or the replica with what the router sent it.
    pub fn title(&self) -> String {
        #[cfg(feature = "fleet")]
        if let Some(i) = self.replica {
            return self.replica_title(i);
        }
        self.run.title.clone()
    }

    #[cfg(feature = "fleet")]
    fn replica_title(&self, i: usize) -> String {
        let sent = self.sim.requests().len() as u64;
        let mut t =
            format!("Replica {} · {} request{}", i + 1, group_thousands(sent), if sent == 1 { "" } else { "s" });
        if matches!(self.run.config.allocator, AllocatorConfig::Paged { prefix_caching: true, .. }) {
            t += &format!(" · prefix hits {:.0}%", 100.0 * self.sim.kv().prefix_cache_hit_rate());
        }
        t
    }
}

impl Run {
    /// The maps this run draws (`Run::panels`), each with what it is.
    pub fn map_panels(&self) -> impl Iterator<Item = Panel<'_>> {
        let fleet = cfg!(feature = "fleet") && self.panels().len() > 1;
        self.panels().iter().enumerate().map(move |(i, sim)| Panel { run: self, replica: fleet.then_some(i), sim })
    }
}

impl Engine {
    fn new(config: &SimConfig) -> Result<Engine, String> {
        #[cfg(feature = "fleet")]
        if config.replicas > 1 {
            return FleetRun::new(config.clone()).map(|f| Engine::Fleet(Box::new(f)));
        }
        let mut sim = Simulation::new(config.clone()).map_err(|e| e.to_string())?;
        let checkpoints = Checkpoints::new(&mut sim, DEFAULT_BUDGET_BYTES);
        Ok(Engine::One { sim, checkpoints })
    }
}

/// Why `sim`'s head of the queue was not admitted in its last step, in the learner's words.
fn queue_note(sim: &Simulation, config: &SimConfig, paged: bool) -> Option<String> {
    use crate::engine::scheduler::HolReason;
    let last = sim.series().last()?;
    if last.waiting == 0 {
        return None;
    }
    let behind = match last.waiting {
        1 => "It waits".to_string(),
        n => format!(
            "It and the {} requests behind it wait (first come, first served)",
            group_thousands(u64::from(n) - 1)
        ),
    };
    let free = 100.0 * (1.0 - sim.kv().allocated_tokens() as f64 / sim.kv().capacity_tokens().max(1) as f64);
    let s = &config.scheduler;
    let why = match sim.head_of_line()? {
        HolReason::Memory(b) if b.enough_total_free && !paged => format!(
            "its slab (prompt + max_tokens, reserved whole) is larger than any hole, though {free:.0}% of the KV memory is free in all: external fragmentation, free memory in pieces too small to use (paged blocks need no single hole)"
        ),
        HolReason::Memory(b) if b.enough_total_free => {
            format!("its blocks do not fit beside the watermark vLLM keeps, though {free:.0}% of the KV memory is free")
        }
        HolReason::Memory(_) if !paged => format!(
            "its slab (prompt + max_tokens, reserved whole) is larger than the {free:.0}% of the KV memory that is free"
        ),
        HolReason::Memory(_) => format!("its prompt needs more blocks than the {free:.0}% of the KV memory that is free"),
        HolReason::SeqLimit => format!("max_num_seqs ({}) requests already run", s.max_num_seqs),
        HolReason::TokenBudget => format!(
            "its prompt does not fit in what is left of the step's token budget (max_num_batched_tokens {}; raise it, or turn on chunked prefill where the scheduler has it)",
            s.max_num_batched_tokens
        ),
    };
    Some(format!("The request at the head of the queue is not admitted: {why}. {behind}."))
}

/// Most memory-map cells the page draws (a 1,024 × 1,024 canvas at one pixel a cell).
pub const MAX_MAP_CELLS: u64 = 1 << 20;
/// Most replicas a page run may have (each drawn as a small map).
#[cfg(feature = "fleet")]
pub const MAX_PAGE_REPLICAS: u32 = 16;
/// Most requests a page run may generate (the engine makes them all up front).
pub const MAX_PAGE_REQUESTS: f64 = 250_000.0;

/// Setups the engine accepts but a browser tab cannot draw or hold smoothly.
pub fn check_page_limits(config: &SimConfig) -> Result<(), String> {
    let cell_tokens = match config.allocator {
        AllocatorConfig::Paged { block_size, .. } => u64::from(block_size),
        AllocatorConfig::Contiguous { .. } => u64::from(crate::engine::sim::CONTIGUOUS_CELL_TOKENS),
    };
    #[cfg(feature = "fleet")]
    if config.replicas > MAX_PAGE_REPLICAS {
        return Err(format!(
            "replicas: the page draws up to {MAX_PAGE_REPLICAS} replicas side by side, and this preset has {}; lower it (`kvlab run` runs up to {})",
            config.replicas,
            crate::engine::fleet::MAX_REPLICAS
        ));
    }
    let cells = config.capacity_tokens() / cell_tokens.max(1) * u64::from(config.replicas.max(1));
    if cells > MAX_MAP_CELLS {
        return Err(format!(
            "kv_memory_gib: {} GiB makes a map of {} cells of {cell_tokens} tokens; the page draws up to {}: use less KV memory or larger blocks",
            config.kv_memory_gib,
            group_thousands(cells),
            group_thousands(MAX_MAP_CELLS)
        ));
    }
    if let Arrival::Concurrency { num_requests, .. } = config.workload.arrival {
        if f64::from(num_requests) > MAX_PAGE_REQUESTS {
            return Err(format!(
                "workload.arrival.num_requests: {} requests is more than the page simulates ({}); lower it (the native `kvlab run` has no such limit)",
                group_thousands(u64::from(num_requests)),
                group_thousands(MAX_PAGE_REQUESTS as u64)
            ));
        }
    }
    if let Arrival::Poisson { rate_per_s, bursts } = &config.workload.arrival {
        let expected = rate_per_s * config.duration_s
            + bursts.iter().map(|b| b.rate_per_s * (b.end_s - b.start_s).max(0.0)).sum::<f64>();
        if expected > MAX_PAGE_REQUESTS {
            return Err(format!(
                "workload.arrival.rate_per_s: about {} requests in {} s is more than the page simulates ({}); lower the rate or the duration (the native `kvlab run` has no such limit)",
                group_thousands(expected as u64),
                config.duration_s,
                group_thousands(MAX_PAGE_REQUESTS as u64)
            ));
        }
    }
    Ok(())
}

/// "Contiguous · first-fit · reserve prompt + max_tokens" / "Paged · 16-token blocks · vLLM v1".
/// Defaults the preset leaves out (prefix caching) are read from the resolved configuration.
pub fn allocator_title(a: &AllocatorDto, config: &SimConfig) -> String {
    match a {
        AllocatorDto::Contiguous { reserve, fit } => format!(
            "Contiguous · {} · reserve {}",
            match fit {
                FitDto::FirstFit => "first-fit",
                FitDto::BestFit => "best-fit",
            },
            match reserve {
                ReserveDto::PromptPlusMaxTokens => "prompt + max_tokens",
                ReserveDto::MaxModelLen => "max_model_len",
            }
        ),
        AllocatorDto::Paged { block_size, .. } => {
            let caching = matches!(config.allocator, AllocatorConfig::Paged { prefix_caching: true, .. });
            let tp = config.tensor_parallel_size;
            format!(
                "Paged · {block_size}-token blocks{}{} · vLLM {}{}",
                // A size vLLM's default backend does not run is labelled, not refused.
                if config.block_size_note().is_some() { " (not a FlashAttention size)" } else { "" },
                if caching { " · prefix caching" } else { "" },
                config.scheduler.engine.name(),
                if tp > 1 { format!(" · TP {tp}") } else { String::new() }
            )
        }
    }
}
