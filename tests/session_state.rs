//! The lab state, natively (the session layer compiles without a browser): it round-trips
//! through the URL fragment for every shipped preset, damaged links give messages that say what
//! is wrong, control edits go through lab paths, and a rejected change keeps the lab's previous
//! runs. (tests/web_state.rs keeps what needs the browser's own URL parser.)
#![cfg(not(target_arch = "wasm32"))]

use kvlab::formats::preset::{AllocatorDto, PresetDto};
use kvlab::session::command::Row;
use kvlab::session::control_edit::{add_row, display_path, edit, remove_row, value_for};
use kvlab::session::lab::Lab;
use kvlab::session::presets;
use kvlab::session::url_state::{base64url_decode, base64url_encode, LabState, PageOptions};
use serde_json::json;

fn preset(id: &str) -> PresetDto {
    presets::dto(id).unwrap()
}

#[test]
fn every_shipped_preset_round_trips_through_the_url() {
    for id in presets::ids() {
        let mut s = LabState::new(preset(id));
        s.compare = true;
        s.t_s = Some(12.5);
        s.hidden = vec!["swapped".into()];
        s.switch_allocator(!s.is_paged());
        let fragment = format!("#{}", s.to_fragment());
        let back = LabState::from_fragment(&fragment).unwrap().expect("a lab state");
        assert_eq!(back, s, "{id} did not round-trip");
    }
}

#[test]
fn base64url_round_trips_all_lengths_and_text() {
    for n in 0..10usize {
        let bytes: Vec<u8> = (0..n as u8).map(|b| b.wrapping_mul(97)).collect();
        assert_eq!(base64url_decode(&base64url_encode(&bytes)).unwrap(), bytes);
    }
    let text = "Prefix “caché” 40 req/s ✓";
    let enc = base64url_encode(text.as_bytes());
    assert!(enc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{enc}");
    assert_eq!(base64url_decode(&enc).unwrap(), text.as_bytes());
    assert_eq!(base64url_decode("aGk=").unwrap(), b"hi", "padding is accepted");
    assert!(base64url_decode("a").is_err());
    assert!(base64url_decode("a*b").unwrap_err().contains("position 1"));
}

#[test]
fn damaged_links_say_what_is_wrong() {
    assert_eq!(LabState::from_fragment("#other=1").unwrap(), None);
    assert!(LabState::from_fragment("#lab=%%%").unwrap_err().contains("damaged"));
    let bad_json = format!("lab={}", base64url_encode(b"{\"v\":1,"));
    assert!(LabState::from_fragment(&bad_json).unwrap_err().contains("not valid JSON"));
    let mut v = serde_json::to_value(LabState::new(preset("paged-default"))).unwrap();
    v["preset"]["scheduler"]["max_num_seqs"] = json!("many");
    let e = LabState::from_fragment(&format!("lab={}", base64url_encode(v.to_string().as_bytes()))).unwrap_err();
    assert!(e.contains("preset.scheduler.max_num_seqs"), "{e}");
    v["preset"]["scheduler"]["max_num_seqs"] = json!(8);
    v["v"] = json!(7);
    let e = LabState::from_fragment(&format!("lab={}", base64url_encode(v.to_string().as_bytes()))).unwrap_err();
    assert!(e.contains("version 7"), "{e}");
    v["v"] = json!(1);
    v["zoom"] = json!(2);
    let e = LabState::from_fragment(&format!("lab={}", base64url_encode(v.to_string().as_bytes()))).unwrap_err();
    assert!(e.contains("zoom"), "{e}");
}

#[test]
fn page_options_come_from_the_query() {
    let o = PageOptions::from_pairs([("embed", "1"), ("preset", "bursty"), ("autoplay", "1")]);
    assert!(o.embed);
    assert_eq!(o.preset.as_deref(), Some("bursty"));
    assert_eq!(o.autoplay, Some(true));
    assert_eq!(PageOptions::from_pairs([("embed", "0")]), PageOptions::default());
}

#[test]
fn controls_edit_preset_paths_and_name_bad_values() {
    let s = LabState::new(preset("contiguous-default"));
    // A form field's text is read as the number it holds.
    let next = edit(&s, "scheduler.max_num_seqs", json!("64")).unwrap();
    assert_eq!(next.preset.scheduler.max_num_seqs, Some(64));
    let next = edit(&next, "workload.classes[0].prompt_tokens.mean", json!(900.0)).unwrap();
    assert_eq!(next.preset.workload.classes[0].prompt_tokens.mean, Some(900.0));
    assert_eq!(value_for(&next, "workload.classes[0].prompt_tokens.mean"), Some(json!(900.0)));
    // The paged settings are remembered while contiguous is in use, then come back.
    let next = edit(&next, "allocator.block_size", json!(32)).unwrap();
    assert!(!next.is_paged());
    assert_eq!(value_for(&next, "allocator.block_size"), Some(json!(32)));
    let paged = edit(&next, "allocator.kind", json!("paged")).unwrap();
    assert_eq!(paged.preset.allocator, AllocatorDto::Paged { block_size: 32, prefix_caching: None });
    // Left out, prefix caching shows vLLM v1's default (on); under v0 its default (off).
    assert_eq!(value_for(&paged, "allocator.prefix_caching"), Some(json!(true)));
    assert_eq!(value_for(&paged, "scheduler.watermark"), Some(json!(0.0)));
    let v0 = edit(&paged, "scheduler.engine", json!("v0")).unwrap();
    assert_eq!(value_for(&v0, "allocator.prefix_caching"), Some(json!(false)));
    assert_eq!(value_for(&v0, "scheduler.watermark"), Some(json!(0.01)));
    assert_eq!(value_for(&v0, "tensor_parallel_size"), Some(json!(1)));
    let back = edit(&paged, "allocator.kind", json!("contiguous")).unwrap();
    assert_eq!(back.preset.allocator, s.preset.allocator);
    // Bad values name the field the way the engine does, and say what to write.
    let e = edit(&s, "workload.classes[0].n", json!("lots")).unwrap_err();
    assert!(e.starts_with("workload.classes[0].n: \"lots\" is not a number"), "{e}");
    let e = edit(&s, "scheduler.max_num_seqs", json!(16.5)).unwrap_err();
    assert_eq!(e, "scheduler.max_num_seqs: 16.5 is not a whole number; enter one like 17");
    let e = edit(&s, "scheduler.max_num_seqs", json!("16.5")).unwrap_err();
    assert!(e.contains("16.5 is not a whole number"), "{e}");
    assert!(edit(&s, "scheduler.no_such_knob", json!(1)).unwrap_err().contains("no_such_knob"));
    assert!(edit(&s, "allocator.block_size", json!("big")).unwrap_err().contains("allocator.block_size"));
    assert!(edit(&s, "allocator.kind", json!("slab")).unwrap_err().contains("\"contiguous\" or \"paged\""));
    assert!(edit(&s, "kv_memory.kind", json!(3)).unwrap_err().contains("\"gib\" or \"gpu\""));
    assert_eq!(display_path("workload.arrival.bursts[2].end_s"), "workload.arrival.bursts[2].end_s");
}

#[test]
fn the_host_tier_field_adds_sizes_and_removes_the_tier() {
    let s = LabState::new(preset("prefix-caching"));
    // No tier shows 0; a size (as the form's text) adds one with vLLM's policy; 0 or an emptied
    // field takes it out; text that is no number is refused at the field.
    assert_eq!(value_for(&s, "kv_offload.cpu_gib"), Some(json!(0)));
    let tiered = edit(&s, "kv_offload.cpu_gib", json!("24")).unwrap();
    let tier = tiered.preset.kv_offload.as_ref().expect("a host tier");
    assert_eq!((tier.cpu_gib, tier.policy), (24.0, kvlab::engine::offload::OffloadPolicy::Lru));
    assert_eq!(value_for(&tiered, "kv_offload.cpu_gib"), Some(json!(24.0)));
    assert!(edit(&tiered, "kv_offload.cpu_gib", json!(0)).unwrap().preset.kv_offload.is_none());
    assert!(edit(&tiered, "kv_offload.cpu_gib", json!(" ")).unwrap().preset.kv_offload.is_none());
    let e = edit(&s, "kv_offload.cpu_gib", json!("lots")).unwrap_err();
    assert!(e.starts_with("kv_offload.cpu_gib: \"lots\" is not a number"), "{e}");
}

#[test]
fn the_step_clock_field_picks_the_kernel_tables_and_a_gpu_without_them_is_refused_at_it() {
    let s = LabState::new(preset("paged-default"));
    // Left out, the clock is the roofline; "kernels" asks for the tables, "roofline" leaves the
    // field out again.
    assert_eq!(value_for(&s, "clock"), Some(json!("roofline")));
    let kernels = edit(&s, "clock", json!("kernels")).unwrap();
    assert_eq!(value_for(&kernels, "clock"), Some(json!("kernels")));
    let mut lab = Lab::new(kernels.clone(), PageOptions::default()).expect("the H100 has tables");
    assert!(lab.runs[0].config.runs_on_kernels());
    let back = edit(&kernels, "clock", json!("roofline")).unwrap();
    assert!(serde_json::to_value(&back.preset).unwrap().get("clock").is_none());
    // An RTX 4090 has no tables: the lab keeps its runs and the refusal names the field and the fix.
    let on_4090 = edit(&edit(&kernels, "gpu", json!("rtx-4090")).unwrap(), "kv_memory_gib", json!(4)).unwrap();
    let e = lab.apply(on_4090, true).unwrap_err();
    assert!(e.starts_with("clock: ") && e.contains("set clock to \"roofline\""), "{e}");
    assert!(lab.runs[0].config.runs_on_kernels());
}

#[test]
fn rows_are_added_and_removed() {
    let s = LabState::new(preset("contiguous-default"));
    let two = add_row(&s, Row::Class);
    assert_eq!(two.preset.workload.classes.len(), 2);
    assert_eq!(remove_row(&two, Row::Class, 0).preset.workload.classes.len(), 1);
    let burst = add_row(&s, Row::Burst);
    assert_eq!(value_for(&burst, "workload.arrival.bursts[0].start_s"), Some(json!(20.0)));
    assert_eq!(remove_row(&burst, Row::Burst, 0), s);
}

#[test]
fn a_rejected_state_keeps_the_previous_runs() {
    let mut lab = Lab::new(LabState::new(preset("contiguous-default")), PageOptions::default()).unwrap();
    lab.seek(10_000_000);
    let before = serde_json::to_string(&lab.runs[0].report()).unwrap();
    let mut bad = lab.state.clone();
    bad.preset.scheduler.max_num_seqs = Some(0);
    let e = lab.apply(bad, true).unwrap_err();
    assert!(e.contains("scheduler.max_num_seqs"), "{e}");
    assert_eq!(serde_json::to_string(&lab.runs[0].report()).unwrap(), before, "the runs changed");
    assert_eq!(lab.t_us, 10_000_000);
    assert_eq!(lab.state.preset.scheduler.max_num_seqs, Some(256));
}

#[test]
fn compare_mode_runs_both_allocators_on_the_same_traffic() {
    let mut s = LabState::new(preset("contiguous-default"));
    s.compare = true;
    let mut lab = Lab::new(s, PageOptions::default()).unwrap();
    assert_eq!(lab.runs.iter().map(|r| r.label).collect::<Vec<_>>(), ["contiguous", "paged"]);
    lab.seek(lab.duration_us());
    let (c, p) = (lab.runs[0].report(), lab.runs[1].report());
    assert_eq!(c.requests.arrived, p.requests.arrived, "the same arrivals");
    assert!(p.kv.utilization_mean > c.kv.utilization_mean);
    // Going back (after the end) re-simulates; the chart draws nothing past the time shown.
    let full = lab.runs[0].chart_series().to_vec();
    lab.seek(5_000_000);
    for run in &lab.runs {
        // The series stops at the last step that ended by 5 s (the engine has run one further).
        let s = run.chart_series();
        assert!(s.iter().all(|p| p.t_us <= 5_000_000), "{}: the chart runs past 5 s", run.label);
        assert!(s[s.len() - 1].t_us > 4_500_000, "{}: the chart stops short of 5 s", run.label);
        assert!(run.now_us() >= 5_000_000);
    }
    let shown = lab.runs[0].chart_series();
    assert!(!shown.is_empty() && shown.len() < full.len());
    assert_eq!(shown, &full[..shown.len()], "the same run, cut at the time shown");
}

/// vLLM's startup checks hold on the page as in the CLI: a max_model_len the pool cannot hold is
/// refused in vLLM's words, and the lab keeps what it had.
#[test]
fn setups_vllm_would_not_start_are_refused_on_the_page() {
    let mut lab = Lab::new(LabState::new(preset("paged-default")), PageOptions::default()).unwrap();
    let mut long = lab.state.clone();
    long.preset.kv_memory_gib = Some(1.0);
    long.preset.scheduler.max_model_len = 32768;
    long.preset.scheduler.max_num_batched_tokens = Some(32768);
    let e = lab.apply(long, true).unwrap_err();
    assert!(e.starts_with("scheduler.max_model_len: To serve at least one request"), "{e}");
    assert!(e.contains("estimated maximum model length is 8176"), "{e}");
    assert_eq!(lab.state.preset.kv_memory_gib, Some(10.0), "the lab keeps its setup");
    // From the GPU up, with tensor parallelism: the run carries vLLM's startup lines.
    let mut tp = lab.state.clone();
    tp.preset.kv_memory_gib = None;
    tp.preset.gpu_memory_utilization = Some(0.9);
    tp.preset.tensor_parallel_size = 4;
    tp.preset.model = serde_json::json!("llama-3-70b");
    lab.apply(tp, true).unwrap();
    let g = lab.runs[0].report().gpu_memory.expect("derived from the GPU");
    assert_eq!(g.tensor_parallel_size, 4);
    assert!(lab.runs[0].title.contains("TP 4"), "{}", lab.runs[0].title);
    // The settings' "KV memory" switch goes back to given GiB and to the GPU's share again.
    assert_eq!(value_for(&lab.state, "kv_memory.kind"), Some(json!("gpu")));
    assert_eq!(value_for(&lab.state, "gpu_memory_in_use_gib"), Some(json!(0)));
    let gib = edit(&lab.state, "kv_memory.kind", json!("gib")).unwrap();
    assert_eq!((gib.preset.kv_memory_gib, gib.preset.gpu_memory_utilization), (Some(10.0), None));
    let gpu = edit(&gib, "kv_memory.kind", json!("gpu")).unwrap();
    assert_eq!((gpu.preset.kv_memory_gib, gpu.preset.gpu_memory_utilization), (None, Some(0.9)));
    let second = edit(&gpu, "gpu_memory_in_use_gib", json!(60.0)).unwrap();
    let e = lab.apply(second, true).unwrap_err();
    assert!(e.starts_with("gpu_memory_utilization: Free memory on device"), "{e}");
}

#[test]
fn setups_too_big_for_a_tab_are_refused_with_a_reason() {
    let mut lab = Lab::new(LabState::new(preset("paged-default")), PageOptions::default()).unwrap();
    let mut huge = lab.state.clone();
    // 100 GiB of fp8 KV fits an H200 beside Llama-3-8B, but is 1.6 million 1-token blocks.
    huge.preset.gpu = "h200".into();
    huge.preset.kv_dtype = kvlab::formats::preset::KvDtypeDto::Fp8;
    huge.preset.kv_memory_gib = Some(100.0);
    huge.preset.allocator = AllocatorDto::Paged { block_size: 1, prefix_caching: Some(false) };
    let e = lab.apply(huge, true).unwrap_err();
    assert!(e.starts_with("kv_memory_gib:") && e.contains("1,048,576"), "{e}");
    let mut flood = lab.state.clone();
    flood.preset.duration_s = 600.0;
    flood.preset.workload.arrival = kvlab::formats::preset::ArrivalDto::Poisson { rate_per_s: 5000.0, bursts: vec![] };
    let e = lab.apply(flood, true).unwrap_err();
    assert!(e.starts_with("workload.arrival.rate_per_s:"), "{e}");
    assert_eq!(lab.state.preset, preset("paged-default"));
}

/// The header names the setup on screen: the preset's title while it is that preset, and once
/// edited a line derived from the setup itself, never the old title with "(edited)" on it.
#[test]
fn the_title_is_derived_from_the_setup_once_edited() {
    use kvlab::session::title::title;
    let loaded = preset("contiguous-default");
    let s = LabState::new(loaded.clone());
    let t = title(&s, &loaded);
    assert_eq!(t.shipped, Some("contiguous-default"));
    assert_eq!(t.header.as_deref(), Some(loaded.title.as_str()));
    // Switched to paged blocks: the line says paged, not "Contiguous first-fit … (edited)".
    let paged = edit(&s, "allocator.kind", json!("paged")).unwrap();
    let t = title(&paged, &loaded);
    let header = t.header.unwrap();
    assert!(header.starts_with("Edited: Paged · 16-token blocks · 10 GiB KV · llama-3-8b on "), "{header}");
    assert!(!header.contains("Contiguous") && !header.contains("(edited)"), "{header}");
    assert!(t.tooltip.contains(&format!("loaded as “{}”", loaded.title)), "{}", t.tooltip);
    assert_eq!((t.shipped, t.picker.as_str()), (None, "custom (edited)"));
    // From the GPU, with tensor parallelism; compare mode.
    let mut gpu = edit(&paged, "kv_memory.kind", json!("gpu")).unwrap();
    gpu.preset.tensor_parallel_size = 2;
    gpu.compare = true;
    let header = title(&gpu, &loaded).header.unwrap();
    assert!(header.starts_with("Edited: Contiguous vs paged · KV from 90% of the GPU · llama-3-8b on "), "{header}");
    assert!(header.ends_with(" × 2"), "{header}");
    // Edited back to a shipped preset: its title again.
    let back = edit(&paged, "allocator.kind", json!("contiguous")).unwrap();
    assert_eq!(title(&back, &loaded).header.as_deref(), Some(loaded.title.as_str()));
}

/// The charts never draw a step that ends after the time shown: paused inside a long step, the
/// series stops at the last step that ended (the engine has already run the next one).
#[test]
fn the_chart_series_never_runs_past_the_time_shown() {
    let mut inside_a_step = 0;
    for id in kvlab::session::presets::ids() {
        let mut lab = Lab::new(LabState::new(preset(id)), PageOptions::default()).unwrap();
        for t in [1_234_567, 7_300_001, 31_000_003] {
            lab.seek(t.min(lab.duration_us()));
            for run in &lab.runs {
                let s = run.chart_series();
                assert!(s.last().is_none_or(|p| p.t_us <= t), "{id} {}: the chart runs past {t} µs", run.label);
                inside_a_step += usize::from(run.now_us() > t);
            }
        }
    }
    assert!(inside_a_step > 0, "some seek stops inside a step");
}

/// The Sweep panel offers only the knobs that apply: a request rate has no place on a trace's
/// arrivals or a closed loop's, nor a number of clients on Poisson or trace arrivals (sweeping
/// it would fail every point), and a mission's locked knobs are not offered.
#[test]
fn the_sweep_offers_only_the_knobs_the_preset_has_a_place_for() {
    use kvlab::session::sweep::{SweepJob, KNOBS};
    let poisson: serde_json::Value = serde_json::to_value(presets::dto("paged-default").unwrap()).unwrap();
    let mut trace = poisson.clone();
    trace["workload"]["arrival"] =
        serde_json::json!({"kind": "trace", "csv": "arrival_s,prompt_tokens,output_tokens\n0,100,10\n1,100,10\n"});
    let mut closed = poisson.clone();
    closed["workload"]["arrival"] =
        serde_json::json!({"kind": "concurrency", "max_concurrency": 8, "num_requests": 50});
    let offered = |p: &serde_json::Value| -> Vec<&str> {
        KNOBS.iter().map(|(k, _)| *k).filter(|k| SweepJob::offered(p, None, k)).collect()
    };
    let all_but =
        |skip: &[&str]| -> Vec<&str> { KNOBS.iter().map(|(k, _)| *k).filter(|k| !skip.contains(k)).collect() };
    let (rate, clients, tier) =
        ("workload.arrival.rate_per_s", "workload.arrival.max_concurrency", "kv_offload.cpu_gib");
    assert_eq!(offered(&poisson), all_but(&[clients]));
    let on_trace = offered(&trace);
    assert_eq!(on_trace, all_but(&[rate, clients]), "{on_trace:?}");
    assert_eq!(offered(&closed), all_but(&[rate]));
    // A host tier's size is offered on the paged pool, and sweeping it runs: the example's p95
    // TTFT falls from a tier the GPU pool's size to one four times larger.
    let tiered: serde_json::Value = serde_json::from_str(include_str!("../docs/examples/host-tier.json")).unwrap();
    assert_eq!(offered(&tiered), all_but(&[clients]));
    let mut job = SweepJob::plan(&tiered, tier, "4,16").expect("a sweep of the tier's size");
    while job.step(f64::INFINITY, &|| 0.0) {}
    let ttft: Vec<f64> =
        job.points().iter().map(|(_, runs)| runs[1].as_ref().expect("paged runs").ttft_p95_ms).collect();
    assert!(ttft[1] < ttft[0], "a larger tier finds more: {ttft:?}");
    let m3 = kvlab::missions::shipped::mission("m3-preemption-storm").unwrap();
    let in_mission: Vec<&str> =
        KNOBS.iter().map(|(k, _)| *k).filter(|k| SweepJob::offered(&poisson, Some(&m3), k)).collect();
    assert!(in_mission.iter().all(|k| kvlab::session::control_edit::control_unlocked(m3.knobs(), k)), "{in_mission:?}");
    assert!(in_mission.len() < KNOBS.len(), "mission 3 locks some knobs: {in_mission:?}");
}

/// A fixed class length (`{"fixed": N}`) through the class controls: both fields show N; a new
/// mean keeps it fixed at that length, a new p99 makes it the log-normal of mean N and that p99;
/// every result is a preset the engine accepts.
#[test]
fn a_fixed_length_is_shown_and_edited_through_the_mean_and_p99_fields() {
    let mut dto = presets::dto("paged-default").unwrap();
    dto.workload.classes[0].prompt_tokens = kvlab::formats::preset::DistDto { mean: None, p99: None, fixed: Some(512) };
    let state = LabState::new(dto);
    let (mean, p99) = ("workload.classes[0].prompt_tokens.mean", "workload.classes[0].prompt_tokens.p99");
    assert_eq!((value_for(&state, mean), value_for(&state, p99)), (Some(json!(512)), Some(json!(512))));
    let longer = edit(&state, mean, json!("1024")).unwrap();
    assert_eq!(longer.preset.workload.classes[0].prompt_tokens.fixed, Some(1024));
    longer.preset.to_config().unwrap();
    let spread = edit(&state, p99, json!(2048)).unwrap();
    let d = spread.preset.workload.classes[0].prompt_tokens;
    assert_eq!((d.mean, d.p99, d.fixed), (Some(512.0), Some(2048.0), None));
    spread.preset.to_config().unwrap();
    let e = edit(&state, mean, json!(16.5)).unwrap_err();
    assert!(e.contains("16.5 is not a whole number of tokens"), "{e}");
    // The output length is untouched, and a log-normal length edits as before.
    let out = edit(&state, "workload.classes[0].output_tokens.mean", json!(300)).unwrap();
    assert_eq!(out.preset.workload.classes[0].output_tokens.mean, Some(300.0));
}

/// A run with `until_all_finished` in the lab: its length is `duration_s` or the time reached
/// until it ends, then its end (kept when going back); the End button goes to its end, playback
/// stops there, and a drained Poisson run shows the time past `duration_s`.
#[test]
fn a_run_until_all_finished_is_as_long_as_it_turns_out() {
    // The clients control reads and edits the closed loop.
    let state = LabState::new(preset("bench-concurrency"));
    let clients = "workload.arrival.max_concurrency";
    assert_eq!(value_for(&state, clients), Some(json!(16)));
    let more = edit(&state, clients, json!("32")).unwrap();
    assert_eq!(value_for(&more, clients), Some(json!(32)));
    more.preset.to_config().unwrap();
    assert_eq!(value_for(&LabState::new(preset("paged-default")), clients), None);

    let mut lab = Lab::new(LabState::new(preset("bench-concurrency")), PageOptions::default()).unwrap();
    assert_eq!(lab.duration_us(), 60_000_000, "duration_s until the end is known");
    lab.seek(5_000_000);
    assert!(!lab.is_at_end());
    lab.seek(lab.end_limit_us());
    let end = lab.runs[0].now_us();
    assert!(end > 5_000_000 && end < 60_000_000, "{end}");
    assert_eq!((lab.t_us, lab.duration_us()), (end, end));
    assert!(lab.is_at_end());
    assert_eq!(lab.runs[0].report().requests.finished, 200);
    lab.seek(2_000_000);
    assert_eq!((lab.t_us, lab.duration_us()), (2_000_000, end), "the end stays known");
    lab.seek(u64::MAX);
    assert_eq!(lab.t_us, end);
    // Playback as fast as it goes stops at the end.
    lab.seek(0);
    lab.speed = 0.0;
    lab.play();
    let mut ticks = 0;
    while lab.playing && ticks < 10_000 {
        lab.tick(ticks as f64 * 16.0, 1e9, &|| 0.0);
        ticks += 1;
    }
    assert!(!lab.playing && lab.is_at_end() && lab.t_us == end, "{} of {end}", lab.t_us);

    // A Poisson run drained past duration_s on a small pool.
    let mut dto = preset("paged-default");
    dto.until_all_finished = true;
    dto.kv_memory_gib = Some(2.0);
    let mut lab = Lab::new(LabState::new(dto), PageOptions::default()).unwrap();
    lab.seek(61_000_000);
    assert_eq!(lab.t_us, 61_000_000, "time goes past duration_s");
    assert!(lab.duration_us() >= 61_000_000 && !lab.is_at_end());
    lab.seek(lab.end_limit_us());
    let end = lab.runs[0].now_us();
    assert!(end > 61_000_000 && lab.is_at_end() && lab.duration_us() == end, "{end}");
    assert!(lab.runs[0].panels()[0].all_finished());
    let series = lab.runs[0].chart_series();
    assert_eq!(series.last().map(|p| p.t_us), Some(end), "the chart covers the run");
}
