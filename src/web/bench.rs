//! In-page measurements for docs/PERFORMANCE.md (driven by scripts/bench-web.sh through
//! `kvlab.benchFrames` and `kvlab.benchSimulate`). Wall-clock time is read here, in the page,
//! never in the engine.

use serde::Serialize;

use crate::engine::Simulation;
use crate::render::RenderOptions;

use super::app::App;
use super::dom;

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn p95(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * 0.95).ceil() as usize).clamp(1, v.len()) - 1]
}

#[derive(Serialize)]
pub struct FrameBench {
    frames: u32,
    cells: usize,
    median_ms: f64,
    p95_ms: f64,
    /// Memory map alone: snapshot from the engine, RGBA buffer, put_image_data.
    map_median_ms: f64,
    /// Both charts alone (plotters on canvas).
    chart_median_ms: f64,
    /// The metrics table alone (reports and DOM text).
    metrics_median_ms: f64,
}

/// Full redraws of the current state, each forced to redo every part.
pub fn frames(app: &App, n: u32) -> FrameBench {
    let lab = app.lab();
    let mut view = app.view.borrow_mut();
    for _ in 0..20 {
        view.invalidate_content();
        view.render(&lab); // settle the layout and warm the code up
    }
    let mut total = Vec::with_capacity(n as usize);
    let mut map_only = Vec::with_capacity(n as usize);
    let mut charts = Vec::with_capacity(n as usize);
    let mut metrics = Vec::with_capacity(n as usize);
    for _ in 0..n {
        view.invalidate_content();
        let t0 = dom::now_ms();
        view.render(&lab);
        total.push(dom::now_ms() - t0);
        let t1 = dom::now_ms();
        for (p, mv) in lab.panels().iter().zip(view.maps.iter_mut()) {
            let _ = mv.paint(&p.sim.memory_map(), &RenderOptions::default());
        }
        map_only.push(dom::now_ms() - t1);
        view.invalidate_content();
        let t2 = dom::now_ms();
        view.render_charts(&lab);
        charts.push(dom::now_ms() - t2);
        let t3 = dom::now_ms();
        view.render_metrics(&lab);
        metrics.push(dom::now_ms() - t3);
    }
    let cells = lab.panels().iter().map(|p| p.sim.memory_map().cells.len()).sum();
    FrameBench {
        frames: n,
        cells,
        median_ms: median(&mut total),
        p95_ms: p95(&mut total),
        map_median_ms: median(&mut map_only),
        chart_median_ms: median(&mut charts),
        metrics_median_ms: median(&mut metrics),
    }
}

#[derive(Serialize)]
pub struct SimBench {
    reps: u32,
    /// Runs timed together in each sample (its time is divided by this).
    batch: u32,
    median_ms: f64,
    min_ms: f64,
    steps: u64,
    /// Every sample's time per run, in order.
    times_ms: Vec<f64>,
}

/// Simulating the first run's preset from 0 to its end: `reps` samples of `batch` runs each
/// (after 5 untimed runs), each sample's time per run.
pub fn simulate(app: &App, reps: u32, batch: u32) -> Option<SimBench> {
    let config = match app.lab().runs.first() {
        Some(r) => r.config.clone(),
        None => return None,
    };
    // Untimed runs first, so that V8 has tiered the hot code up from its baseline compiler.
    for _ in 0..5 {
        if let Ok(mut sim) = Simulation::new(config.clone()) {
            sim.run_to_end();
        }
    }
    let mut times = Vec::with_capacity(reps as usize);
    let mut steps = 0;
    for _ in 0..reps {
        let t0 = dom::now_ms();
        for _ in 0..batch {
            if let Ok(mut sim) = Simulation::new(config.clone()) {
                let report = sim.run_to_end();
                steps = report.steps;
            }
        }
        times.push((dom::now_ms() - t0) / f64::from(batch));
    }
    let min = times.iter().copied().fold(f64::INFINITY, f64::min);
    let times_ms = times.clone();
    Some(SimBench { reps, batch, median_ms: median(&mut times), min_ms: min, steps, times_ms })
}

#[derive(Serialize)]
pub struct ScrubBench {
    moves: u32,
    duration_s: f64,
    /// One slider move as the page makes it: the seek (from the engine's nearest checkpoint)
    /// and one frame.
    median_ms: f64,
    p95_ms: f64,
    max_ms: f64,
    /// The seek alone.
    seek_median_ms: f64,
    seek_p95_ms: f64,
    /// Parts of the frame, timed again apart: the engine's memory map and the report.
    memory_map_median_ms: f64,
    report_median_ms: f64,
    /// Medians of the frame's parts right after a seek: the engine's memory map, painting it,
    /// the charts, the metrics.
    cold_parts_ms: [f64; 4],
}

/// Slider moves over the whole run, as the time slider makes them (a `seek` command, then a
/// frame), after one untimed pass to the end that records the checkpoints. The positions step
/// by the golden ratio of the run's length, so they go back and forth over all of it and every
/// run of the script moves to the same times.
pub fn scrub(app: &App, moves: u32) -> ScrubBench {
    let duration = app.lab().duration_us();
    seek_to(app, duration);
    app.draw();
    let (mut total, mut seek) = (Vec::with_capacity(moves as usize), Vec::with_capacity(moves as usize));
    let (mut map, mut report) = (Vec::with_capacity(moves as usize), Vec::with_capacity(moves as usize));
    let mut x = 0.5_f64;
    for _ in 0..moves {
        x = (x + 0.618_033_988_749_895).fract();
        let t0 = dom::now_ms();
        seek_to(app, (x * duration as f64) as u64);
        let t1 = dom::now_ms();
        app.draw();
        let t2 = dom::now_ms();
        seek.push(t1 - t0);
        total.push(t2 - t0);
        // Two parts of that frame again, untimed in the move: the engine's memory map and report.
        let lab = app.lab();
        if let Some(run) = lab.runs.first() {
            let t3 = dom::now_ms();
            std::hint::black_box(run.panels()[0].memory_map());
            let t4 = dom::now_ms();
            std::hint::black_box(run.report());
            map.push(t4 - t3);
            report.push(dom::now_ms() - t4);
        }
    }
    // The same moves again, the frame's parts timed one by one right after each seek.
    let mut parts = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    let mut x = 0.5_f64;
    for _ in 0..moves {
        x = (x + 0.618_033_988_749_895).fract();
        seek_to(app, (x * duration as f64) as u64);
        let lab = app.lab();
        let mut view = app.view.borrow_mut();
        view.invalidate_content();
        let t0 = dom::now_ms();
        let maps: Vec<_> = lab.panels().iter().map(|p| p.sim.memory_map()).collect();
        let t1 = dom::now_ms();
        for (m, mv) in maps.iter().zip(view.maps.iter_mut()) {
            let _ = mv.paint(m, &RenderOptions::default());
        }
        let t2 = dom::now_ms();
        view.render_charts(&lab);
        let t3 = dom::now_ms();
        view.render_metrics(&lab);
        let t4 = dom::now_ms();
        for (v, d) in parts.iter_mut().zip([t1 - t0, t2 - t1, t3 - t2, t4 - t3]) {
            v.push(d);
        }
    }
    let [mut p_map, mut p_paint, mut p_charts, mut p_metrics] = parts;
    let max_ms = total.iter().copied().fold(0.0, f64::max);
    ScrubBench {
        cold_parts_ms: [median(&mut p_map), median(&mut p_paint), median(&mut p_charts), median(&mut p_metrics)],
        moves,
        duration_s: duration as f64 / 1e6,
        median_ms: median(&mut total),
        p95_ms: p95(&mut total),
        max_ms,
        seek_median_ms: median(&mut seek),
        seek_p95_ms: p95(&mut seek),
        memory_map_median_ms: median(&mut map),
        report_median_ms: median(&mut report),
    }
}

/// Moves the lab to `t_us`, as the time slider does.
fn seek_to(app: &App, t_us: u64) {
    let _ = app.dispatch(crate::session::command::Command::Seek { t_s: t_us as f64 / 1e6 }, super::app::Input::Page);
}
