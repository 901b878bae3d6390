//! The host-memory KV tier's band under each memory map (`kv_offload`, docs/OFFLOAD.md): the
//! tier's buffer drawn with the map's own renderer, a cell per chunk (or per run of chunks when
//! the tier has more chunks than the band has room for), coloured by the request that stored
//! it, empty while its store is on the host link, barred while a load to the GPU pins it. The
//! band links to the inspector: hovering a chunk describes it and frames its request on both
//! maps. Runs without a tier (and the page's first module, which has none) hide it.

use web_sys::{HtmlCanvasElement, HtmlElement};

use crate::engine::plan::group_thousands;
use crate::engine::{MapCell, MemoryMap, RequestView};
use crate::render::RenderOptions;
use crate::session::run::Panel;

use super::dom::{self, Node};
use super::map::{strong, MapView};

/// The band's height at most, CSS pixels.
const MAX_BAND_HEIGHT: f64 = 120.0;
/// The smallest cell pitch, device pixels, before chunks share a cell.
const MIN_PITCH: u32 = 2;

/// Each map's host band: its box, caption and canvas.
pub struct HostBands {
    bands: Vec<HtmlElement>,
    subs: Vec<HtmlElement>,
    pub views: Vec<MapView>,
    /// The chunk cell under the pointer: (run, cell).
    pub hover: Option<(usize, usize)>,
    /// Each band's width (device pixels) at the last fit, to refit on a resize.
    fitted: Vec<u32>,
}

impl HostBands {
    pub fn new() -> Result<HostBands, String> {
        let list = |prefix: &str| {
            (0..2).map(|i| dom::need::<HtmlElement>(&format!("{prefix}-{i}"))).collect::<Result<Vec<_>, _>>()
        };
        let views = (0..2)
            .map(|i| dom::need::<HtmlCanvasElement>(&format!("host-{i}")).map(MapView::new))
            .collect::<Result<_, _>>()?;
        Ok(HostBands { bands: list("host-band")?, subs: list("host-sub")?, views, hover: None, fitted: vec![0; 2] })
    }

    /// The most cells band `i` draws: its width at two device pixels a cell, times the rows of
    /// its greatest height.
    fn max_cells(&self, i: usize) -> usize {
        let dpr = dom::device_pixel_ratio();
        let width = self.width(i);
        let (w, h) = ((f64::from(width) * dpr) as usize, (MAX_BAND_HEIGHT * dpr) as usize);
        (w / MIN_PITCH as usize).max(1) * (h / MIN_PITCH as usize).max(1)
    }

    fn width(&self, i: usize) -> i32 {
        self.views[i].canvas.parent_element().map_or(600, |w| w.client_width()).max(60)
    }

    /// The maps' host maps now (None for a run without a tier, and for a fleet's replicas,
    /// whose tiers the metrics sum up), each sized to its band.
    pub fn maps(&self, panels: &[Panel<'_>]) -> Vec<Option<MemoryMap>> {
        let band = |i: usize, p: &Panel<'_>| p.sim.host_memory_map(self.max_cells(i.min(1)));
        panels.iter().enumerate().map(|(i, p)| if p.replica.is_some() { None } else { band(i, p) }).collect()
    }

    /// The request (owner + 1, as `MapCell::owner`) of the hovered chunk cell.
    pub fn hovered_owner(&self, maps: &[Option<MemoryMap>]) -> Option<u32> {
        let (run, cell) = self.hover?;
        let owner = maps.get(run)?.as_ref()?.cells.get(cell)?.owner;
        (owner != 0).then_some(owner)
    }

    /// Draws each run's band (hidden without a tier), framing `highlight`'s chunks.
    pub fn render(&mut self, maps: &[Option<MemoryMap>], highlight: Option<u32>, dark: bool, relayout: bool) {
        for i in 0..self.bands.len() {
            let map = maps.get(i).and_then(Option::as_ref);
            dom::set_hidden(&self.bands[i], map.is_none());
            let Some(m) = map else {
                self.hover = self.hover.filter(|h| h.0 != i);
                continue;
            };
            let width = self.width(i);
            if relayout || m.cells.len() != self.views[i].cell_count() || self.fitted[i] != width as u32 {
                self.views[i].fit(m.cells.len(), f64::from(width), MAX_BAND_HEIGHT);
                self.fitted[i] = width as u32;
            }
            dom::set_text(&self.subs[i], &caption(m));
            let opts = RenderOptions { highlight_owner: highlight, cursor: None, dark };
            if let Err(e) = self.views[i].paint(m, &opts) {
                web_sys::console::error_2(&"host band paint failed".into(), &e);
            }
        }
    }
}

/// The band's caption: its chunks, what each cell spans, and how many are held and moving.
fn caption(m: &MemoryMap) -> String {
    let held = m.cells.iter().filter(|c| !c.is_free()).count();
    let loading = m.cells.iter().filter(|c| c.flags & MapCell::LOADING != 0).count();
    let storing = m.cells.iter().filter(|c| !c.is_free() && c.live_tokens == 0).count();
    let mut s = format!(
        "{} cells × {} tokens · {} held",
        group_thousands(m.cells.len() as u64),
        group_thousands(u64::from(m.cell_tokens)),
        group_thousands(held as u64)
    );
    if storing > 0 {
        s.push_str(&format!(" · {} being stored", group_thousands(storing as u64)));
    }
    if loading > 0 {
        s.push_str(&format!(" · {} loading to the GPU", group_thousands(loading as u64)));
    }
    s
}

/// What the inspector says about cell `index` of a host band, given its owner's view.
pub fn describe_chunk(index: usize, map: &MemoryMap, view: Option<&RequestView>, block_size: u32) -> Vec<Node> {
    let Some(cell) = map.cells.get(index) else { return Vec::new() };
    let per_cell = (map.cell_tokens / block_size.max(1)).max(1) as usize;
    let place = if per_cell == 1 {
        format!("Host chunk {}", group_thousands(index as u64))
    } else {
        format!(
            "Host chunks {}–{}",
            group_thousands((index * per_cell) as u64),
            group_thousands(((index + 1) * per_cell - 1) as u64)
        )
    };
    let Some(request) = cell.request() else {
        let what = "free host memory: the next store takes it (a full tier first evicts its least recently used chunk)";
        return vec![dom::node("p").class("insp-main").text(&format!("{place}: ")).child(strong(what))];
    };
    let state = if cell.flags & MapCell::LOADING != 0 {
        "being loaded to the GPU: a request the GPU's prefix cache missed reads it over the host link instead of computing it again"
    } else if cell.live_tokens == 0 {
        "being stored: its copy is on the host link and cannot be read yet"
    } else {
        "stored: a later request whose prefix the GPU evicted loads it instead of computing it again"
    };
    let line = dom::node("p").class("insp-main").text(&format!("{place} (KV offload): ")).child(strong(state));
    let who = match view {
        Some(v) => format!(
            "Stored from the prompt of request #{} ({}, prompt {} tokens, arrived {:.2} s); the copy stays on the host after the request ends",
            v.request,
            v.status,
            group_thousands(u64::from(v.prompt_tokens)),
            v.arrival_s
        ),
        None => format!("Stored from the prompt of request #{request}"),
    };
    vec![line, dom::node("p").class("insp-cell").text(&who)]
}
