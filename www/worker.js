// The long-run worker (a module Web Worker; src/web/day_run.rs starts it): loads the page's full
// module, kvlab-full.js / kvlab-full_bg.wasm (whose `start` sees no window here and builds nothing),
// runs the preset to its end a slice of simulated time at a time (src/web/worker.rs, DayRun),
// and posts progress between slices and the results at the end. The page cancels by
// terminating the worker. It then stays to cut 60 s windows of its trace for the lab.
import init, { DayRun } from "./kvlab-full.js";

const ready = init({ module_or_path: new URL("kvlab-full_bg.wasm", import.meta.url) });
let run = null;

function fail(e) {
  self.postMessage({ kind: "error", message: String((e && e.message) || e) });
}

// The kernel tables a run on measured kernels needs (`clock: "kernels"`), fetched once; a failed
// fetch leaves the run on the roofline, which its summary says.
async function fetchKernelTables(preset) {
  const gpu = DayRun.kernelTablesWanted(preset);
  if (!gpu) return;
  const file = `kernels/${gpu}.json`;
  try {
    const resp = await fetch(new URL(file, import.meta.url));
    if (!resp.ok) throw new Error(`"${file}" answered ${resp.status} ${resp.statusText}`);
    DayRun.kernelTablesFetched(gpu, await resp.text(), false);
  } catch (e) {
    DayRun.kernelTablesFetched(gpu, String((e && e.message) || e), true);
  }
}

async function start(msg) {
  await ready;
  await fetchKernelTables(msg.preset);
  const t0 = performance.now();
  try {
    run = new DayRun(msg.preset, msg.text || "");
  } catch (e) {
    fail(e);
    return;
  }
  const progress = () => ({ kind: "progress", now_s: run.nowS, duration_s: run.durationS,
    arrived: run.arrived, total: run.totalRequests });
  self.postMessage({ kind: "summary", text: run.summary, total: run.totalRequests, duration_s: run.durationS });
  // About 200 slices whatever the length: progress a few times a second, little overhead.
  const slice = Math.max(1, run.durationS / 200);
  try {
    while (!run.advance(slice)) self.postMessage(progress());
  } catch (e) {
    fail(e);
    return;
  }
  self.postMessage(progress());
  const wall_ms = performance.now() - t0;
  self.postMessage({ kind: "done", wall_ms, report: run.reportJson(), csv: run.seriesCsv(),
    chart: run.chartPoints(2048), capacity: run.capacityTokens, busiest_s: run.busiestWindowS(60) });
}

self.onmessage = function (e) {
  const msg = e.data || {};
  if (msg.kind === "run") {
    start(msg);
  } else if (msg.kind === "window" && run) {
    self.postMessage({ kind: "window", start_s: msg.start_s, csv: run.windowCsv(msg.start_s, msg.len_s) });
  }
};
