//! Methods of `window.kvlab` that only tests and measurements call, compiled with the cargo
//! feature `test-hooks` alone: the release bundle (`trunk build --release`) never has them.
//! scripts/test-web.sh builds a second bundle with them (`target/dist-test-hooks/`) for the
//! panic test of tests/e2e_lab.rs; scripts/bench-web.sh builds its own release bundle with them.

use wasm_bindgen::prelude::*;

use super::handle::LabHandle;

#[wasm_bindgen]
impl LabHandle {
    /// `performance.now()` when the lab became interactive (ms since navigation start).
    #[wasm_bindgen(js_name = readyMs)]
    pub fn ready_ms(&self) -> f64 {
        self.app.ready_ms.get()
    }

    /// Times `frames` full redraws (maps, charts, metrics, inspector, transport) at the
    /// current state and returns `{frames, cells, median_ms, p95_ms, map_median_ms, …}`.
    #[wasm_bindgen(js_name = benchFrames)]
    pub fn bench_frames(&self, frames: u32) -> Result<JsValue, JsError> {
        super::js::to_js(&super::bench::frames(&self.app, frames.max(1))).map_err(|e| JsError::new(&e))
    }

    /// Times simulating the current preset from 0 to the end: `reps` samples of `batch` runs
    /// each (1 when left out), a sample's time divided by `batch`, so that runs shorter than the
    /// page's coarse timer are still resolved: `{reps, batch, median_ms, min_ms, steps,
    /// times_ms}` (`null` without a run).
    #[wasm_bindgen(js_name = benchSimulate)]
    pub fn bench_simulate(&self, reps: u32, batch: Option<u32>) -> Result<JsValue, JsError> {
        let batch = batch.unwrap_or(1).max(1);
        super::js::to_js(&super::bench::simulate(&self.app, reps.max(1), batch)).map_err(|e| JsError::new(&e))
    }

    /// Times `moves` slider moves over the current run (seek from the nearest checkpoint, then
    /// a frame): `{moves, duration_s, median_ms, p95_ms, max_ms, seek_median_ms, seek_p95_ms}`.
    #[wasm_bindgen(js_name = benchScrub)]
    pub fn bench_scrub(&self, moves: u32) -> Result<JsValue, JsError> {
        super::js::to_js(&super::bench::scrub(&self.app, moves.max(1))).map_err(|e| JsError::new(&e))
    }

    /// Panics on purpose, to check that the page reports a panic.
    #[wasm_bindgen(js_name = testPanic)]
    pub fn test_panic(&self) {
        panic!("testPanic() was called: this is the page's panic report");
    }
}
