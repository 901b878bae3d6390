// Starts the lab. The page has two modules (docs/LAB.md, "Two modules"): the first view's
// (kvlab.js, kvlab_bg.wasm: the lab, its settings, map and charts), which a bare page or an embed
// loads, and the full lab (kvlab-full.js, kvlab-full_bg.wasm: sweeps, missions, documents and
// traces from files and links, the hub), which a URL asking for one of those loads at once, and
// the first view's module asks for when the learner, `window.kvlab` or a host page does
// (src/web/full_lab.rs calls `kvlabLoadFull`). The full module is fetched and compiled while the
// first view keeps running; then the first view stops, the page goes back to the markup it was
// served with, the full module starts on the same URL (whose fragment carries the lab's state)
// and what was asked is done there. If the fetch fails, the first view keeps running and says
// what failed. A file rather than trunk's inline loader, so that the page runs under a
// Content-Security-Policy without 'unsafe-inline' (Trunk.toml: inject_scripts = false, filehash
// = false keep these names fixed).
import init, { stopFirstView } from "./kvlab.js";

const root = document.documentElement;
// The page as served, before either module draws into it.
const served = document.body.cloneNode(true);

function panic(text, e) {
  const box = document.getElementById("panic");
  if (box) {
    box.textContent = text + e;
    box.hidden = false;
  }
  console.error(e);
}

// Whether the URL asks for what only the full module has: the hub, a mission, a linked document,
// or a lab state (the fragment) that plays a mission or replays a trace.
function urlNeedsFull() {
  const q = new URLSearchParams(location.search);
  if (/^(1|true|yes|on)$/.test(q.get("hub") || "")) return true;
  if (q.get("mission") || q.get("mission_url") || q.get("preset_url")) return true;
  const m = /(?:^#|&)lab=([A-Za-z0-9_-]*)/.exec(location.hash);
  if (!m) return false;
  try {
    const b64 = m[1].replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(b64 + "===".slice((b64.length + 3) % 4)), (c) => c.charCodeAt(0));
    const state = JSON.parse(new TextDecoder().decode(bytes));
    const arrival = state && state.preset && state.preset.workload && state.preset.workload.arrival;
    return state != null && (state.mission != null || (arrival != null && arrival.kind === "trace"));
  } catch (e) {
    return false; // a damaged link: the first view says what is wrong with it
  }
}

// The line under the header that says the rest of the lab is loading, or why it did not.
function say(text, failed) {
  const line = document.getElementById("full-lab-status");
  if (!line) return;
  line.textContent = text;
  line.classList.toggle("failed", !!failed);
  line.setAttribute("role", failed ? "alert" : "status");
  line.hidden = !text;
}

async function fetchFull() {
  const glue = await import("./kvlab-full.js");
  const url = new URL("kvlab-full_bg.wasm", import.meta.url);
  const resp = await fetch(url);
  if (!resp.ok) throw new Error(`kvlab-full_bg.wasm: HTTP ${resp.status} ${resp.statusText}`.trim());
  const module = await WebAssembly.compile(await resp.arrayBuffer());
  return { glue, module };
}

// A failure stays until the reader clicks it away.
document.addEventListener("click", (e) => {
  if (e.target && e.target.id === "full-lab-status" && e.target.classList.contains("failed")) say("");
});

// The full module fetched and compiled once: on the reader's intent (the pointer or the focus
// on a control that needs it), so that the click finds it (nearly) ready, or when asked.
let fetched = null;
function prefetch() {
  if (!fetched) fetched = fetchFull().catch((e) => { fetched = null; throw e; });
  return fetched;
}
const NEEDS_FULL = "#sweep-run, #sweep-search-run, #load-btn, #hub-link";
for (const type of ["pointerover", "focusin"]) {
  document.addEventListener(type, (e) => {
    if (root.dataset.module === "first-view" && e.target.closest && e.target.closest(NEEDS_FULL)) {
      prefetch().catch(() => {}); // a failure is said when the full lab is asked for
    }
  });
}

// What the first view handed over, done in order once the full module runs.
const pending = [];
let loading = null;

function replay(lab, what) {
  try {
    // `link`: the URL the full module started on was the point; nothing to do.
    if (what.command) lab.command(what.command);
    else if (what.trace) lab.loadTrace(what.trace.name, what.trace.text);
    else if (what.click) document.getElementById(what.click)?.click();
    else if (what.editor != null) {
      // The Preset JSON editor's text, typed again where the full lab reads it.
      const editor = document.getElementById("json-editor");
      const ta = document.getElementById("preset-json");
      if (editor && ta) {
        editor.open = true;
        ta.value = what.editor;
        document.querySelector('[data-action="apply-json"]')?.click();
      }
    }
  } catch (e) {
    // A refusal: the page already shows it where the eye is.
  }
}

async function loadFull() {
  root.dataset.module = "loading-full";
  say("Loading the rest of the lab (sweeps, missions, files)…");
  let full;
  try {
    full = await prefetch();
  } catch (e) {
    pending.length = 0;
    root.dataset.module = "first-view";
    say(`The rest of the lab could not load (${(e && e.message) || e}): sweeps, missions and files need it. ` +
      "Everything else keeps running; reload the page to try again. (Click to close.)", true);
    return;
  }
  const lab = window.kvlab;
  const t_s = lab.now();
  const playing = lab.isPlaying();
  // Paused, the link carries the time shown; the full module starts there.
  if (playing) lab.pause();
  const focused = document.activeElement && document.activeElement.id;
  const scroll = [window.scrollX, window.scrollY];
  // What the reader typed into the Sweep panel, which no lab state carries.
  const typed = [...document.querySelectorAll("#sweep input[id], #sweep select[id]")]
    .map((el) => [el.id, el.value, el.hasAttribute("data-picked")]);
  stopFirstView();
  document.body.replaceWith(served.cloneNode(true));
  try {
    await full.glue.default({ module_or_path: full.module });
  } catch (e) {
    panic("The lab could not start its full module: ", e);
    return;
  }
  // The lab as the first view left it, then what was asked, in order.
  for (const [id, value, picked] of typed) {
    const el = document.getElementById(id);
    if (!el) continue;
    el.value = value;
    if (picked) el.setAttribute("data-picked", ""); // the knob the reader chose stays chosen
  }
  const next = window.kvlab;
  if (Math.abs(next.now() - t_s) > 1e-9) next.command({ type: "seek", t_s });
  if (playing) next.play();
  window.scrollTo(scroll[0], scroll[1]);
  const el = focused && document.getElementById(focused);
  if (el) el.focus();
  for (const what of pending.splice(0)) replay(next, what);
  root.dataset.module = "full";
}

// The one hand-over under way, started if none is.
function handOver() {
  if (!loading) loading = loadFull().finally(() => { loading = null; });
  return loading;
}

// Called by the first view's module (src/web/full_lab.rs) with what only the full lab does.
window.kvlabLoadFull = function (json) {
  pending.push(JSON.parse(json));
  handOver();
};

// For scripts driving `window.kvlab` (docs/EMBED.md): a promise that settles once the full lab
// runs (at once when it already does) and what the first view handed over is done; it loads the
// full module if nothing asked for it yet. `window.kvlab` is then the full module's handle.
window.kvlabFull = function () {
  if (root.dataset.module === "full") return Promise.resolve(window.kvlab);
  return handOver().then(() => {
    if (root.dataset.module !== "full") throw new Error("the full lab could not load");
    return window.kvlab;
  });
};

async function start() {
  if (urlNeedsFull()) {
    root.dataset.module = "loading-full";
    const full = await prefetch();
    await full.glue.default({ module_or_path: full.module });
    root.dataset.module = "full";
  } else {
    await init({ module_or_path: new URL("kvlab_bg.wasm", import.meta.url) });
    root.dataset.module = "first-view";
  }
}

start().catch((e) => panic("The lab could not load its WebAssembly module: ", e));
