#!/usr/bin/env bash
# Measures the browser lab in headless Chromium and prints medians (docs/PERFORMANCE.md):
#   - frame time (memory map + charts + metrics + inspector) at the default 5,120 cells, in
#     compare mode, and at 102,400 cells (paged with 1-token blocks; contiguous on 200 GiB over two H200s)
#   - the whole 60 s contiguous-default scenario simulated in wasm, next to native (criterion)
#   - scrubbing (a slider move: seek from the nearest checkpoint and a frame) and a 16-point
#     block-size sweep in the Sweep panel
#   - release bundle size (wasm + JS, gzip -9) and time to interactive from 127.0.0.1
# Usage: scripts/bench-web.sh [--build] [--no-native] [--screenshots DIR]
#   --build            rebuild dist/ and target/dist-bench/ with trunk first (built when missing
#                      anyway; target/dist-bench/ is the release bundle plus the test-hooks
#                      feature, whose kvlab.benchFrames/benchSimulate/benchScrub/readyMs the page is timed by)
#   --no-native        skip the criterion run of the native engine
#   --screenshots DIR  instead of measuring, save the page's reference screenshots in DIR
#                      (standalone 1400×900 and 1280×720, compare, embed 800×500, narrow 420,
#                      h200-scale with 1-token blocks: 819,200 cells at one pixel each)
# Needs the tools of scripts/setup.sh (trunk, chromium, chromedriver, node from npm's setup).
# Timings are reported, never asserted: they depend on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.tools/bin:$PWD/.tools/node_modules/.bin:$HOME/.cargo/bin:$PATH"

build=0
native=1
shots=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=1 ;;
    --no-native) native=0 ;;
    --screenshots) shots="${2:?--screenshots needs a directory}"; shift ;;
    *) echo "unknown option $1 (use --build, --no-native, --screenshots DIR)" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$shots" ]; then
  mkdir -p "$shots"
  shots="$(cd "$shots" && pwd)"
  native=0
fi

for tool in chromium chromedriver node; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/setup.sh" >&2; exit 1; }
done

if [ "$build" = 1 ] || [ ! -f dist/index.html ]; then
  command -v trunk >/dev/null || { echo "missing trunk: run scripts/setup.sh" >&2; exit 1; }
  echo "==> trunk build --release --offline"
  trunk build --release --offline
fi
# The measurements call kvlab.benchFrames/benchSimulate/readyMs, which only a bundle with the
# `test-hooks` feature has: the same release build with it, in its own folder.
bench_dist=target/dist-bench
if [ "$build" = 1 ] || [ ! -f "$bench_dist/index.html" ] || [ -n "$(find src www Cargo.toml -newer "$bench_dist/index.html" -print -quit)" ]; then
  command -v trunk >/dev/null || { echo "missing trunk: run scripts/setup.sh" >&2; exit 1; }
  echo "==> trunk build --release --offline --features test-hooks --dist $bench_dist"
  # Both modules with the hooks: the Sweep panel's case hands the page to the full one.
  KVLAB_WEB_FEATURES=test-hooks trunk build --release --offline --features test-hooks --dist "$bench_dist"
fi

if [ -z "$shots" ]; then
echo "==> Release bundle (gzip -9)"
scripts/bundle-size.sh

if [ "$native" = 1 ]; then
  echo "==> Native engine (criterion, cargo bench --bench engine -- simulate_60s/contiguous-default)"
  cargo bench --bench engine -- 'simulate_60s/contiguous-default' --noplot >/dev/null 2>&1 || \
    cargo bench --bench engine -- 'simulate_60s/contiguous-default' >/dev/null
  est=target/criterion/simulate_60s/contiguous-default/new/estimates.json
  if [ -f "$est" ]; then
    node -e 'const e = require(process.argv[1]); console.log("native contiguous-default 60 s: median " + (e.median.point_estimate / 1e6).toFixed(2) + " ms")' "$PWD/$est"
  fi
fi
fi

echo "==> Browser (headless Chromium via chromedriver)"
SHOTS="$shots" DIST="$PWD/$bench_dist" CHROMEDRIVER="$(command -v chromedriver)" node --input-type=module - <<'JS'
import { spawn } from "node:child_process";
import http from "node:http";
import net from "node:net";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const dist = process.env.DIST;
const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm", ".css": "text/css" };
const server = http.createServer((req, res) => {
  const p = decodeURIComponent(req.url.split(/[?#]/)[0]);
  const file = path.join(dist, p === "/" ? "index.html" : p);
  if (!file.startsWith(dist) || !fs.existsSync(file)) { res.writeHead(404); res.end(); return; }
  res.writeHead(200, { "content-type": types[path.extname(file)] || "application/octet-stream", "cache-control": "no-store" });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const base = `http://127.0.0.1:${server.address().port}/`;

const freePort = () => new Promise((r) => { const s = net.createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => r(p)); }); });
const port = await freePort();
const driver = spawn(process.env.CHROMEDRIVER, [`--port=${port}`], { stdio: "ignore" });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function wd(method, p, body) {
  const r = await fetch(`http://127.0.0.1:${port}${p}`, { method, headers: { "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
  const j = await r.json();
  if (j.value && j.value.error) throw new Error(`${j.value.error}: ${j.value.message}`);
  return j.value;
}

let session;
for (let i = 0; i < 100 && !session; i++) {
  try {
    session = await wd("POST", "/session", { capabilities: { alwaysMatch: { "goog:chromeOptions": {
      binary: fs.existsSync("/usr/bin/chromium") ? "/usr/bin/chromium" : undefined,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--hide-scrollbars", "--window-size=1400,900", `--user-data-dir=${fs.mkdtempSync(path.join(os.tmpdir(), "kvlab-bench-"))}`],
    } } } });
  } catch { await sleep(100); }
}
if (!session) { console.error("no WebDriver session"); process.exit(1); }
const sid = session.sessionId;
const exec = (script) => wd("POST", `/session/${sid}/execute/sync`, { script, args: [] });
async function open(url) {
  await wd("POST", `/session/${sid}/url`, { url });
  for (let i = 0; i < 400; i++) {
    if (await exec("return !!(window.kvlab && document.getElementById('kvlab').dataset.ready)")) return;
    await sleep(25);
  }
  throw new Error("the lab did not become ready");
}
const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

// Sizes the window so that the page's viewport is w × h.
async function resize(w, h) {
  await wd("POST", `/session/${sid}/window/rect`, { width: w, height: h });
  const [iw, ih] = await exec("return [window.innerWidth, window.innerHeight]");
  await wd("POST", `/session/${sid}/window/rect`, { width: 2 * w - iw, height: 2 * h - ih });
}
async function shot(name) {
  const png = await wd("GET", `/session/${sid}/screenshot`);
  fs.writeFileSync(path.join(process.env.SHOTS, name), Buffer.from(png, "base64"));
  console.log(`saved ${name}`);
}
// Moves the pointer over the map canvas at a fraction of its size (the inspector follows).
async function hover(id, fx, fy) {
  const el = await wd("POST", `/session/${sid}/element`, { using: "css selector", value: `#${id}` });
  const ref = Object.values(el)[0];
  const rect = await wd("GET", `/session/${sid}/element/${ref}/rect`);
  const x = Math.round(rect.x + rect.width * fx), y = Math.round(rect.y + rect.height * fy);
  await wd("POST", `/session/${sid}/actions`, { actions: [{ type: "pointer", id: "mouse", parameters: { pointerType: "mouse" },
    actions: [{ type: "pointerMove", duration: 0, origin: "viewport", x, y }] }] });
  await sleep(150);
}
if (process.env.SHOTS) {
  try {
    await resize(1400, 900);
    await open(`${base}?autoplay=0&preset=contiguous-default`);
    await exec("kvlab.runTo(30); return null");
    await shot("standalone-1400x900.png");
    await resize(1280, 720);
    await open(`${base}?autoplay=0&preset=paged-default`);
    await exec("kvlab.runTo(30); return null");
    await hover("map-0", 0.5, 0.4);
    await shot("standalone-paged-1280x720.png");
    await resize(1400, 900);
    await open(`${base}?autoplay=0`);
    await exec("kvlab.setCompare(true); kvlab.runTo(40); return null");
    await shot("compare-1400x900.png");
    await resize(800, 500);
    await open(`${base}?autoplay=0&embed=1&preset=paged-default`);
    await exec("kvlab.setCompare(true); kvlab.runTo(30); return null");
    await shot("embed-800x500.png");
    await resize(420, 900);
    await open(`${base}?autoplay=0&preset=parallel-sampling`);
    await exec("kvlab.runTo(20); return null");
    await shot("narrow-420x900.png");
    await resize(1400, 900);
    await open(`${base}?autoplay=0&preset=h200-scale`);
    await exec("kvlab.setField('allocator.block_size', '1'); kvlab.runTo(300); return null");
    await shot("h200-1-token-blocks-1400x900.png");
  } finally {
    await wd("DELETE", `/session/${sid}`).catch(() => {});
    driver.kill();
    server.close();
  }
  process.exit(0);
}

try {
  // Time to interactive: navigation start to window.kvlab ready, fresh loads.
  const tti = [];
  for (let i = 0; i < 7; i++) {
    await open(`${base}?autoplay=0&n=${i}`);
    tti.push(await exec("return kvlab.readyMs()"));
  }
  console.log(`time to interactive: median ${median(tti).toFixed(0)} ms (first ${tti[0].toFixed(0)} ms, ${tti.length} loads)`);

  // The 60 s default scenario simulated in wasm.
  for (const id of ["contiguous-default", "paged-default"]) {
    await exec(`kvlab.loadPresetId('${id}'); return null`);
    // Samples of 10 runs each: the page's timer is coarsened to 0.1 ms, about a tenth of a run.
    const r = await exec("return kvlab.benchSimulate(25, 10)");
    console.log(`wasm ${id} 60 s: median ${r.median_ms.toFixed(2)} ms, min ${r.min_ms.toFixed(2)} ms (${r.steps} steps, ${r.reps} samples of ${r.batch} runs)`);
    if (process.env.BENCH_VERBOSE) console.log(`  runs: ${r.times_ms.map((t) => t.toFixed(1)).join(" ")}`);
  }

  // Scrubbing: slider moves over a run, each a seek from the nearest checkpoint and one frame.
  const scrubCases = [
    ["paged-default, 60 s", () => exec("kvlab.setCompare(false); kvlab.loadPresetId('paged-default'); return null")],
    ["h200-scale, 600 s, 16-token blocks", () => exec("kvlab.setCompare(false); kvlab.loadPresetId('h200-scale'); return null")],
    ["h200-scale, 600 s, 1-token blocks", () => exec("kvlab.setCompare(false); kvlab.loadPresetId('h200-scale'); kvlab.setField('allocator.block_size', '1'); return null")],
  ];
  for (const [name, setup] of scrubCases) {
    await setup();
    const r = await exec("return kvlab.benchScrub(40)");
    console.log(`scrub ${name}: median ${r.median_ms.toFixed(1)} ms per slider move (p95 ${r.p95_ms.toFixed(1)}, max ${r.max_ms.toFixed(1)}); seek alone median ${r.seek_median_ms.toFixed(1)} ms, p95 ${r.seek_p95_ms.toFixed(1)}; of the frame, the memory map ${r.memory_map_median_ms.toFixed(1)} ms and the report ${r.report_median_ms.toFixed(1)} ms (${r.moves} moves over ${r.duration_s} s); right after a seek: memory map ${r.cold_parts_ms[0].toFixed(1)}, paint ${r.cold_parts_ms[1].toFixed(1)}, charts ${r.cold_parts_ms[2].toFixed(1)}, metrics ${r.cold_parts_ms[3].toFixed(1)} ms`);
  }

  // The Sweep panel: a 16-point block-size sweep of paged-default, from Run to the last point
  // (the panel's own progress line times it).
  const sweepMs = [];
  for (let i = 0; i < 5; i++) {
    await open(`${base}?preset=paged-default&autoplay=0`);
    await exec("document.getElementById('sweep-knob').value = 'allocator.block_size'; document.getElementById('sweep-values').value = '1:16:16'; document.getElementById('sweep-run').click(); return null");
    for (let k = 0; k < 1000 && !(await exec("return !!(kvlab.sweepResults() && kvlab.sweepResults().finished)")); k++) await sleep(10);
    const m = /in (\d+) ms/.exec(await exec("return document.getElementById('sweep-progress').textContent"));
    if (m) sweepMs.push(Number(m[1]));
  }
  console.log(`sweep panel, paged-default, allocator.block_size 1:16:16 (16 points x 2 allocators): median ${median(sweepMs)} ms from Run to the last point (${sweepMs.join(", ")} ms)`);

  // Frame time.
  const big = (alloc, gib, rate, tp = 1) => JSON.stringify({ schema: "kvlab/preset@1", id: "bench", title: "bench", seed: 1, duration_s: 60,
    model: "llama-3-8b", kv_dtype: "fp16", gpu: "h200", kv_memory_gib: gib, tensor_parallel_size: tp, allocator: alloc,
    workload: { arrival: { kind: "poisson", rate_per_s: rate }, classes: [{ name: "chat", weight: 1,
      prompt_tokens: { mean: 1100, p99: 2600 }, output_tokens: { mean: 250, p99: 1150 }, max_tokens: 2048, n: 1, shared_prefix_tokens: 0 }] } });
  const cases = [
    ["default contiguous (5,120 cells)", () => exec("kvlab.loadPresetId('contiguous-default'); kvlab.setCompare(false); kvlab.runTo(30); return null")],
    ["compare mode (2 × 5,120 cells)", () => exec("kvlab.loadPresetId('contiguous-default'); kvlab.setCompare(true); kvlab.runTo(30); return null")],
    ["paged, 1-token blocks, 12.5 GiB (102,400 cells)", () => exec(`kvlab.setCompare(false); kvlab.loadPreset(${JSON.stringify(big({ kind: "paged", block_size: 1 }, 12.5, 14))}); kvlab.runTo(30); return null`)],
    // 200 GiB of KV is more than one H200 holds next to the weights: two GPUs (TP 2) hold it.
    ["contiguous, 200 GiB on two H200s (102,400 cells)", () => exec(`kvlab.setCompare(false); kvlab.loadPreset(${JSON.stringify(big({ kind: "contiguous" }, 200, 150, 2))}); kvlab.runTo(30); return null`)],
    ["h200-scale, 1-token blocks (819,200 cells)", () => exec("kvlab.setCompare(false); kvlab.loadPresetId('h200-scale'); kvlab.setField('allocator.block_size', '1'); kvlab.runTo(300); return null")],
  ];
  for (const [name, setup] of cases) {
    await setup();
    const r = await exec("return kvlab.benchFrames(200)");
    console.log(`frame ${name}: median ${r.median_ms.toFixed(2)} ms, p95 ${r.p95_ms.toFixed(2)} ms; alone: map ${r.map_median_ms.toFixed(2)}, charts ${r.chart_median_ms.toFixed(2)}, metrics ${r.metrics_median_ms.toFixed(2)} ms (${r.cells} cells)`);
  }
} finally {
  await wd("DELETE", `/session/${sid}`).catch(() => {});
  driver.kill();
  server.close();
}
JS

if [ -n "$shots" ] && command -v pngquant >/dev/null; then
  for f in "$shots"/*.png; do pngquant --force --skip-if-larger --quality 80-95 --output "$f" "$f" || true; done
  echo "compressed the screenshots with pngquant"
fi
