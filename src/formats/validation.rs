//! The real vLLM runs `kvlab validate` replays: the committed lists of them
//! (`assets/validation/vllm-runs.json`, runs with per-request timestamps, and
//! `assets/validation/published-runs.json`, figures benchmarks printed, each with its source and
//! how to replay it), the per-request files those name (read from `../shared/validation/`), and
//! each run as a configuration to simulate beside the figures it measured.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Deserialize;

use crate::engine::clock_fit::FitCase;
use crate::engine::fidelity::{
    compare, measured_figures, median_abs_error_pct, simulate, Figure, FigureError, MeasuredRequest,
};
use crate::engine::model::GIB;
use crate::engine::workload::{Arrival, LengthDist, TraceRow, UserClass, WorkloadConfig};
use crate::engine::{EngineVersion, SimConfig};

/// Whether a run sets the clock's constants or only checks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Fitted by both clocks: the roofline's constants and the kernel clock's host costs.
    Fit,
    /// Fitted by the kernel clock's host costs only (its GPU's time comes from measured
    /// kernels); the roofline, fitted on few runs, holds it out.
    FitHost,
    Holdout,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Fit => "fit",
            Role::FitHost => "fit (host costs)",
            Role::Holdout => "held out",
        }
    }

    /// Whether the clock (the kernel clock's host costs, or the roofline) is fitted on the run.
    pub fn fits(self, kernels: bool) -> bool {
        match self {
            Role::Fit => true,
            Role::FitHost => kernels,
            Role::Holdout => false,
        }
    }
}

/// How to replay a run: vLLM's flags as kvlab's preset takes them.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayDto {
    pub role: Role,
    pub gpu: String,
    pub model: String,
    pub tensor_parallel_size: u32,
    pub max_num_seqs: u32,
    pub max_num_batched_tokens: u32,
    pub max_model_len: u32,
    #[serde(default)]
    pub gpu_memory_utilization: Option<f64>,
    /// The KV blocks the run's log printed (replaces the memory derived from the GPU).
    #[serde(default)]
    pub num_gpu_blocks: Option<u64>,
    pub prefix_caching: bool,
    pub chunked_prefill: bool,
    #[serde(default)]
    pub kv_dtype: Option<String>,
    /// The weights' quantization as vLLM's `--quantization` names it (`fp8`), for a checkpoint
    /// quantized from the catalogue's model; absent, the model's own dtype.
    #[serde(default)]
    pub quantization: Option<String>,
    /// The FP8 checkpoint's scale blocks (its config.json's
    /// `quantization_config.weight_block_size`, `[128, 128]` for Qwen's FP8 releases); absent,
    /// one scale per tensor.
    #[serde(default)]
    pub weight_block_size: Option<Vec<u32>>,
    #[serde(default)]
    pub enforce_eager: bool,
    /// The scheduler the run's vLLM version ran (absent: v1; runs of vLLM before 0.8 take v0).
    #[serde(default)]
    pub engine: Option<super::preset::EngineDto>,
    /// Batch-1 decode fits: the prompt lengths at which to compare the fitted line.
    #[serde(default)]
    pub contexts: Vec<u32>,
}

#[derive(Debug, Deserialize)]
struct RunsFile {
    runs: Vec<PerRequestRun>,
}

/// A run with per-request timestamps.
#[derive(Clone, Debug, Deserialize)]
pub struct PerRequestRun {
    pub id: String,
    /// Paths under the validation folder.
    pub requests: String,
    pub workload: String,
    pub source: String,
    pub replay: ReplayDto,
}

#[derive(Debug, Deserialize)]
struct PublishedFile {
    runs: Vec<PublishedRun>,
}

/// A run a benchmark's printed figures describe.
#[derive(Clone, Debug, Deserialize)]
pub struct PublishedRun {
    pub id: String,
    pub source: PublishedSource,
    pub workload: PublishedWorkload,
    pub results: HashMap<String, Option<f64>>,
    #[serde(default)]
    pub replay: Option<ReplayDto>,
    #[serde(default)]
    pub not_replayed: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct PublishedSource {
    pub url: Option<String>,
    pub title: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct PublishedWorkload {
    pub kind: String,
    pub max_concurrency: Option<u32>,
    pub num_prompts: Option<u32>,
    pub input_len: Option<serde_json::Value>,
    pub output_len: Option<f64>,
    /// Each request's prompt and output tokens, in the order sent, where the benchmark printed
    /// them (then they replace `input_len` and `output_len`).
    #[serde(default)]
    pub input_lens: Vec<u32>,
    #[serde(default)]
    pub output_lens: Vec<u32>,
    /// `benchmark_serving.py --random-range-ratio` r as the client's version drew it: each
    /// prompt's and each output's length uniformly from [r·len, len]; absent, the nominal
    /// lengths.
    #[serde(default)]
    pub random_range_ratio: Option<f64>,
}

/// One simulation to compare with what a real run measured.
#[derive(Clone, Debug)]
pub struct ValidationCase {
    /// The run's id, with `@<context>` for a point of a batch-1 fit.
    pub id: String,
    /// The run it belongs to (several points of one batch-1 fit share it).
    pub run: String,
    pub role: Role,
    pub gpu: String,
    pub source: String,
    pub config: SimConfig,
    pub real: Vec<(Figure, f64)>,
    /// One request at a time (a point of a batch-1 decode fit): it pins the bandwidth and the
    /// fixed step cost, not the costs that grow with the batch.
    pub single_request: bool,
}

/// A run left out, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped {
    pub id: String,
    pub reason: String,
}

pub fn per_request_runs(json: &str) -> Result<Vec<PerRequestRun>, String> {
    let f: RunsFile = serde_json::from_str(json).map_err(|e| format!("vllm-runs.json: {e}"))?;
    Ok(f.runs)
}

pub fn published_runs(json: &str) -> Result<Vec<PublishedRun>, String> {
    let f: PublishedFile = serde_json::from_str(json).map_err(|e| format!("published-runs.json: {e}"))?;
    Ok(f.runs)
}

/// The configuration a replay describes, with no traffic yet (an empty trace).
fn base_config(id: &str, r: &ReplayDto) -> Result<SimConfig, String> {
    let mut preset = serde_json::json!({
        "schema": "kvlab/preset@1", "id": id, "seed": 1, "duration_s": 600, "until_all_finished": true,
        "model": r.model, "gpu": r.gpu, "kv_dtype": r.kv_dtype.as_deref().unwrap_or("fp16"),
        "gpu_memory_utilization": r.gpu_memory_utilization.unwrap_or(0.9),
        "tensor_parallel_size": r.tensor_parallel_size,
        "allocator": {"kind": "paged", "block_size": 16, "prefix_caching": r.prefix_caching},
        "scheduler": {"max_num_seqs": r.max_num_seqs, "max_num_batched_tokens": r.max_num_batched_tokens,
                      "max_model_len": r.max_model_len, "chunked_prefill": r.chunked_prefill},
        // A placeholder trace, within any max_model_len: the replay's rows replace it.
        "workload": {"arrival": {"kind": "trace", "csv": "0,1,1", "max_tokens": 1}, "classes": []},
    });
    if r.enforce_eager {
        preset["enforce_eager"] = serde_json::Value::Bool(true);
    }
    if let Some(engine) = &r.engine {
        preset["scheduler"]["engine"] = serde_json::to_value(engine).map_err(|e| format!("{id}: {e}"))?;
    }
    if let Some(q) = &r.quantization {
        let mut hf_config = super::model_catalogue::catalogue_hf_config(&r.model)
            .ok_or_else(|| format!("{id}: the quantized {} is not in the model catalogue", r.model))?;
        if let Some(block) = &r.weight_block_size {
            hf_config["quantization_config"] = serde_json::json!({ "quant_method": q, "weight_block_size": block });
        }
        preset["model"] = serde_json::json!({ "hf_config": hf_config, "quantization": q, "name": r.model });
    }
    let text = preset.to_string();
    let mut config = super::preset::parse_preset(&text).map_err(|e| format!("{id}: {e}"))?;
    if let Some(blocks) = r.num_gpu_blocks {
        config.kv_memory_gib = (blocks * 16 * config.kv_bytes_per_token()) as f64 / GIB as f64;
        config.gpu_memory = None;
    }
    config.enforce_eager = r.enforce_eager;
    Ok(config)
}

/// `config` replaying `rows` (sorted by arrival), its run long enough for all of them.
fn with_rows(mut config: SimConfig, rows: Vec<TraceRow>) -> Result<SimConfig, String> {
    let max_tokens = rows.iter().map(|r| r.output_tokens).max().unwrap_or(1);
    config.workload.arrival = Arrival::Trace { rows: rows.into(), max_tokens, hash_block_tokens: 16 };
    config.validate().map_err(|e| format!("{}: {e}", config.id))?;
    Ok(config)
}

#[derive(Deserialize)]
struct WorkloadLine {
    input_toks: u32,
    output_toks: u32,
    #[serde(default)]
    input_tok_ids: Vec<u32>,
}

#[derive(Deserialize)]
struct RequestLine {
    request_id: String,
    input_toks: u32,
    output_toks: u32,
    arrival_time: f64,
    queued_ts: f64,
    first_token_ts: f64,
    last_token_ts: f64,
}

/// A per-request run as a case: arrivals as the front end accepted them (relative to the
/// first), the dataset's token ids as 16-token prefix blocks (for the prefix cache), and the
/// measured figures with TTFT from arrival (the engine's monotonic stamps shifted by the
/// smallest queueing offset, as the run's own validator converts them).
pub fn per_request_case(
    run: &PerRequestRun,
    requests_jsonl: &str,
    workload_jsonl: &str,
) -> Result<ValidationCase, String> {
    let lines = |text: &str| text.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect::<Vec<_>>();
    let workload: Vec<WorkloadLine> = lines(workload_jsonl)
        .iter()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("{}: line {}: {e}", run.workload, i + 1)))
        .collect::<Result<_, _>>()?;
    let measured: Vec<RequestLine> = lines(requests_jsonl)
        .iter()
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("{}: line {}: {e}", run.requests, i + 1)))
        .collect::<Result<_, _>>()?;
    let offset = measured.iter().map(|m| m.queued_ts - m.arrival_time).fold(f64::INFINITY, f64::min);
    let first_arrival = measured.iter().map(|m| m.arrival_time).fold(f64::INFINITY, f64::min);
    let mut blocks = PrefixBlocks::default();
    let mut rows = Vec::with_capacity(measured.len());
    let mut real = Vec::with_capacity(measured.len());
    for m in &measured {
        let index: usize = m
            .request_id
            .rsplit('-')
            .next()
            .and_then(|i| i.parse().ok())
            .ok_or_else(|| format!("{}: request_id {:?} is not bench-<i>", run.requests, m.request_id))?;
        let w = workload.get(index).ok_or_else(|| format!("{}: no line for {}", run.workload, m.request_id))?;
        if (w.input_toks, w.output_toks) != (m.input_toks, m.output_toks) {
            return Err(format!("{}: {} has other token counts than the workload's line", run.requests, m.request_id));
        }
        let mut row = TraceRow::new(m.arrival_time - first_arrival, w.input_toks, w.output_toks, 1);
        row.hash_ids = blocks.ids(&w.input_tok_ids);
        rows.push(row);
        real.push(MeasuredRequest {
            arrival_s: m.arrival_time + offset,
            first_token_s: m.first_token_ts,
            last_token_s: m.last_token_ts,
            input_tokens: m.input_toks,
            output_tokens: m.output_toks,
        });
    }
    rows.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s));
    let config = with_rows(base_config(&run.id, &run.replay)?, rows)?;
    Ok(ValidationCase {
        id: run.id.clone(),
        run: run.id.clone(),
        role: run.replay.role,
        gpu: run.replay.gpu.clone(),
        source: run.source.clone(),
        config,
        real: measured_figures(&real),
        single_request: false,
    })
}

/// Ids for chains of 16-token blocks: two prompts get the same id for their `i`-th block
/// exactly when their first `16·(i+1)` tokens agree. Ids are handed out in the order blocks
/// are first seen, so they do not depend on any hash order.
#[derive(Default)]
struct PrefixBlocks {
    ids: HashMap<(u32, Vec<u32>), u32>,
}

impl PrefixBlocks {
    fn ids(&mut self, tokens: &[u32]) -> Option<Arc<[u32]>> {
        if tokens.len() < 16 {
            return None;
        }
        let mut parent = u32::MAX;
        let chain: Vec<u32> = tokens
            .chunks_exact(16)
            .map(|chunk| {
                let next = self.ids.len() as u32;
                parent = *self.ids.entry((parent, chunk.to_vec())).or_insert(next);
                parent
            })
            .collect();
        Some(chain.into())
    }
}

/// The cases of a published run, or why it is not replayed.
pub fn published_cases(run: &PublishedRun) -> Result<Vec<ValidationCase>, Skipped> {
    let skip = |reason: String| Skipped { id: run.id.clone(), reason };
    let Some(replay) = &run.replay else {
        return Err(skip(run.not_replayed.clone().unwrap_or_else(|| "no replay given".into())));
    };
    let source = run.source.url.clone().or_else(|| run.source.title.clone()).unwrap_or_default();
    let case = |id: String, config: SimConfig, real: Vec<(Figure, f64)>| ValidationCase {
        id,
        run: run.id.clone(),
        role: replay.role,
        gpu: replay.gpu.clone(),
        source: source.clone(),
        config,
        real,
        single_request: run.workload.kind == "batch1-decode",
    };
    let result = |key: &str| run.results.get(key).copied().flatten();
    let base = base_config(&run.id, replay).map_err(skip)?;
    match run.workload.kind.as_str() {
        "batch1-decode" => {
            let (Some(intercept), Some(slope)) = (result("itl_fit_intercept_ms"), result("itl_fit_slope_ms_per_token"))
            else {
                return Err(skip("the fit's intercept or slope is not published".into()));
            };
            let output = run.workload.output_len.unwrap_or(128.0) as u32;
            replay
                .contexts
                .iter()
                .map(|&ctx| {
                    // The mean gap of 128 tokens generated after a prompt of `ctx` tokens: the
                    // line at the middle of the context they see.
                    let itl = intercept + slope * (f64::from(ctx) + f64::from(output) / 2.0);
                    let config = with_rows(base.clone(), vec![TraceRow::new(0.0, ctx, output, 1)]).map_err(skip)?;
                    Ok(case(format!("{}@{ctx}", run.id), config, vec![(Figure::ItlMean, itl)]))
                })
                .collect()
        }
        "rate" if !run.workload.input_lens.is_empty() => {
            let (inputs, outputs) = (&run.workload.input_lens, &run.workload.output_lens);
            if inputs.len() != outputs.len() || run.workload.num_prompts.is_some_and(|n| n as usize != inputs.len()) {
                return Err(skip("input_lens, output_lens and num_prompts disagree on the number of requests".into()));
            }
            // vLLM samples at least one token for every request.
            let rows = inputs.iter().zip(outputs).map(|(&i, &o)| TraceRow::new(0.0, i, o.max(1), 1)).collect();
            let config = with_rows(base, rows).map_err(skip)?;
            Ok(vec![case(run.id.clone(), config, published_figures(run))])
        }
        "rate" => {
            let (Some(n), Some(input), Some(output)) = (
                run.workload.num_prompts,
                run.workload.input_len.as_ref().and_then(|v| v.as_f64()),
                run.workload.output_len,
            ) else {
                return Err(skip("the number of prompts or their lengths are not published".into()));
            };
            // Without --ignore-eos a request may stop before its output length: where the
            // benchmark printed the tokens it generated, each request generates their mean.
            let generated = result("total_generated_tokens").filter(|_| n > 0).map(|t| t / f64::from(n));
            let output = generated.map_or(output, |g| g.min(output)).round().max(1.0);
            let rows = (0..n).map(|_| TraceRow::new(0.0, input as u32, output as u32, 1)).collect();
            let config = with_rows(base, rows).map_err(skip)?;
            Ok(vec![case(run.id.clone(), config, published_figures(run))])
        }
        "concurrency" => {
            let (Some(clients), Some(n), Some(input), Some(output)) = (
                run.workload.max_concurrency,
                run.workload.num_prompts,
                run.workload.input_len.as_ref().and_then(|v| v.as_f64()),
                run.workload.output_len,
            ) else {
                return Err(skip("the clients, the number of prompts or their lengths are not published".into()));
            };
            let mut config = base;
            // Random lengths keep the clients from moving in lockstep. kvlab's length classes are
            // log-normal: one of the uniform range's mean, (1 + r)/2·len, and 99th percentile,
            // (r + 0.99·(1 − r))·len. Without a range, the nominal lengths.
            let r = run.workload.random_range_ratio.unwrap_or(1.0).clamp(0.0, 1.0);
            let fixed =
                |x: f64| LengthDist { mean: (x * (1.0 + r) / 2.0).round(), p99: (x * (r + 0.99 * (1.0 - r))).round() };
            config.workload = WorkloadConfig {
                arrival: Arrival::Concurrency {
                    max_concurrency: clients,
                    num_requests: n,
                    round_trip_us: crate::engine::workload::DEFAULT_CLIENT_ROUND_TRIP_US,
                },
                classes: vec![UserClass {
                    name: "bench".into(),
                    weight: 1.0,
                    prompt_tokens: fixed(input),
                    output_tokens: fixed(output),
                    max_tokens: output.round() as u32,
                    n: 1,
                    shared_prefix_tokens: 0,
                    tenants: 1,
                }],
            };
            config.validate().map_err(|e| skip(format!("{}: {e}", config.id)))?;
            Ok(vec![case(run.id.clone(), config, published_figures(run))])
        }
        other => Err(skip(format!("a {other:?} workload is not replayed yet"))),
    }
}

/// The figures a benchmark printed, under kvlab's names.
fn published_figures(run: &PublishedRun) -> Vec<(Figure, f64)> {
    const KEYS: &[(&str, Figure)] = &[
        ("ttft_ms_mean", Figure::TtftMean),
        ("ttft_ms_median", Figure::TtftP50),
        ("ttft_ms_p99", Figure::TtftP99),
        ("tpot_ms_mean", Figure::TpotMean),
        ("tpot_ms_median", Figure::TpotP50),
        ("tpot_ms_p99", Figure::TpotP99),
        ("itl_ms_mean", Figure::ItlMean),
        ("itl_ms_median", Figure::ItlP50),
        ("itl_ms_p99", Figure::ItlP99),
        ("e2el_ms_mean", Figure::E2eMean),
        ("request_throughput", Figure::RequestsPerS),
        ("output_throughput", Figure::OutputTokensPerS),
        ("duration_s", Figure::DurationS),
    ];
    KEYS.iter().filter_map(|&(k, f)| run.results.get(k).copied().flatten().map(|v| (f, v))).collect()
}

/// Every case of the committed lists (the per-request runs, then each published file in turn),
/// and the published runs left out; `read` returns the text of a file under the validation
/// folder (`../shared/validation/`).
pub fn all_cases(
    runs_json: &str,
    published_json: &[&str],
    read: &dyn Fn(&str) -> Result<String, String>,
) -> Result<(Vec<ValidationCase>, Vec<Skipped>), String> {
    let mut cases = Vec::new();
    for run in per_request_runs(runs_json)? {
        cases.push(per_request_case(&run, &read(&run.requests)?, &read(&run.workload)?)?);
    }
    let mut skipped = Vec::new();
    for file in published_json {
        for run in published_runs(file)? {
            match published_cases(&run) {
                Ok(c) => cases.extend(c),
                Err(s) => skipped.push(s),
            }
        }
    }
    Ok((cases, skipped))
}

/// One case's errors.
pub struct CaseResult {
    pub case: ValidationCase,
    pub errors: Vec<FigureError>,
}

/// Per GPU: distinct runs and the median absolute error over all their figures.
pub fn per_gpu(results: &[CaseResult]) -> BTreeMap<String, (u32, f64)> {
    let mut by_gpu: BTreeMap<String, (Vec<&str>, Vec<FigureError>)> = BTreeMap::new();
    for r in results {
        let e = by_gpu.entry(r.case.gpu.clone()).or_default();
        if !e.0.contains(&r.case.run.as_str()) {
            e.0.push(&r.case.run);
        }
        e.1.extend(r.errors.iter().cloned());
    }
    by_gpu.into_iter().map(|(g, (runs, errs))| (g, (runs.len() as u32, median_abs_error_pct(&errs)))).collect()
}

/// The runs marked "fit" on `gpu` of vLLM's `engine` generation (and "fit_host" ones where they
/// run on the kernel clock), as `clock_fit::fit` takes them.
pub fn fit_cases<'a>(results: &'a [CaseResult], gpu: &str, engine: EngineVersion) -> Vec<FitCase<'a>> {
    results
        .iter()
        .filter(|r| {
            r.case.role.fits(r.case.config.runs_on_kernels())
                && r.case.gpu == gpu
                && r.case.config.scheduler.engine == engine
        })
        .map(|r| FitCase { config: &r.case.config, real: &r.case.real, single_request: r.case.single_request })
        .collect()
}

/// Every case replayed under the clock's constants for its GPU.
pub fn replay_all(cases: Vec<ValidationCase>) -> Vec<CaseResult> {
    cases
        .into_iter()
        .map(|case| {
            let report = simulate(&case.config, None);
            let errors = compare(&case.real, &report);
            CaseResult { case, errors }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineVersion;

    /// A Lambda-style run: every prompt at once, each with its own lengths, on vLLM 0.6's v0.
    fn run(input_lens: &str, output_lens: &str) -> PublishedRun {
        let text = format!(
            r#"{{"schema": "kvlab/published-runs@1", "runs": [{{"id": "r", "source": {{"url": "u"}},
            "workload": {{"kind": "rate", "num_prompts": 3, "input_lens": {input_lens}, "output_lens": {output_lens}}},
            "results": {{"ttft_ms_median": 50.0}},
            "replay": {{"role": "holdout", "gpu": "h100-sxm", "model": "meta-llama/Llama-3.1-8B-Instruct",
                "tensor_parallel_size": 1, "engine": "v0", "max_num_seqs": 1024, "max_num_batched_tokens": 2048,
                "max_model_len": 2048, "prefix_caching": false, "chunked_prefill": false}}}}]}}"#
        );
        published_runs(&text).expect("parses").remove(0)
    }

    #[test]
    fn per_request_lengths_replay_each_request_on_the_engine_the_run_names() {
        let cases = published_cases(&run("[14, 300, 5]", "[129, 0, 8]")).expect("replays");
        let config = &cases[0].config;
        assert_eq!(config.scheduler.engine, EngineVersion::V0);
        let Arrival::Trace { rows, .. } = &config.workload.arrival else { panic!("a trace") };
        let lens: Vec<(u32, u32)> = rows.iter().map(|r| (r.prompt_tokens, r.output_tokens)).collect();
        assert_eq!(lens, [(14, 129), (300, 1), (5, 8)], "in the order sent; an empty answer still samples one");
        assert!(rows.iter().all(|r| r.arrival_s == 0.0));
    }

    /// A closed loop of 4 clients, 40 prompts of 1,000 in and 200 out, with a length range.
    fn closed_loop(range: &str) -> PublishedRun {
        let text = format!(
            r#"{{"schema": "kvlab/published-runs@1", "runs": [{{"id": "c", "source": {{"url": "u"}},
            "workload": {{"kind": "concurrency", "max_concurrency": 4, "num_prompts": 40, "input_len": 1000, "output_len": 200{range}}},
            "results": {{"ttft_ms_mean": 50.0}},
            "replay": {{"role": "holdout", "gpu": "h100-sxm", "model": "meta-llama/Llama-3.1-8B-Instruct",
                "tensor_parallel_size": 1, "max_num_seqs": 4, "max_num_batched_tokens": 8192,
                "max_model_len": 2048, "prefix_caching": false, "chunked_prefill": true}}}}]}}"#
        );
        published_runs(&text).expect("parses").remove(0)
    }

    #[test]
    fn a_closed_loop_draws_its_lengths_from_the_range_the_client_drew_them_from() {
        let class =
            |range: &str| published_cases(&closed_loop(range)).expect("replays")[0].config.workload.classes[0].clone();
        // Without a range, the nominal lengths; with 0.8, uniform over [0.8, 1] x nominal:
        // a log-normal of its mean (0.9 x) and 99th percentile (0.998 x).
        let fixed = class("");
        assert_eq!((fixed.prompt_tokens.mean, fixed.prompt_tokens.p99), (1000.0, 1000.0));
        assert_eq!((fixed.output_tokens.mean, fixed.output_tokens.p99), (200.0, 200.0));
        let ranged = class(r#", "random_range_ratio": 0.8"#);
        assert_eq!((ranged.prompt_tokens.mean, ranged.prompt_tokens.p99), (900.0, 998.0));
        assert_eq!((ranged.output_tokens.mean, ranged.output_tokens.p99), (180.0, 200.0));
        assert_eq!(ranged.max_tokens, 200, "no output runs past the nominal length");
    }

    #[test]
    fn lengths_that_disagree_are_not_replayed_and_say_why() {
        let e = published_cases(&run("[14, 300]", "[129, 0, 8]")).expect_err("refused");
        assert!(e.reason.contains("disagree"), "{}", e.reason);
    }
}
