//! The physical KV memory map on a canvas. Each frame the cells go through
//! `render::render_map` into one RGBA buffer and onto the canvas with a single
//! `put_image_data`, so pools of 100,000+ cells stay smooth. Also: sizing the canvas to its
//! box, pixel → cell hit-testing, the legend swatches, and the inspector text for a cell.

use wasm_bindgen::{Clamped, JsCast, JsValue};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement, ImageData};

use crate::engine::plan::group_thousands;
use crate::engine::sim::observe::SampleView;
use crate::engine::{MapCell, MemoryMap, RequestView};
use crate::render::{render_map, MapLayout, RenderOptions};

use super::dom::{self, Node};

/// Sizes `canvas` to `layout` and draws `cells` into it through one `ImageData`.
pub fn paint_map(
    canvas: &HtmlCanvasElement,
    cells: &[MapCell],
    cell_tokens: u32,
    layout: &MapLayout,
    opts: &RenderOptions,
    buf: &mut Vec<u8>,
) -> Result<(), JsValue> {
    let (width, height) = (layout.width, layout.height);
    render_map(cells, cell_tokens, layout, opts, buf);
    if canvas.width() != width {
        canvas.set_width(width);
    }
    if canvas.height() != height {
        canvas.set_height(height);
    }
    let ctx = context(canvas)?;
    let image = ImageData::new_with_u8_clamped_array_and_sh(Clamped(buf.as_slice()), width, height)?;
    ctx.put_image_data(&image, 0.0, 0.0)
}

fn context(canvas: &HtmlCanvasElement) -> Result<CanvasRenderingContext2d, JsValue> {
    canvas
        .get_context("2d")?
        .ok_or_else(|| JsValue::from_str("no 2d context"))?
        .dyn_into::<CanvasRenderingContext2d>()
        .map_err(|_| JsValue::from_str("not a 2d context"))
}

/// One memory-map canvas and what was last drawn into it.
pub struct MapView {
    pub canvas: HtmlCanvasElement,
    pub layout: MapLayout,
    buf: Vec<u8>,
    dpr: f64,
}

impl MapView {
    pub fn new(canvas: HtmlCanvasElement) -> MapView {
        MapView { canvas, layout: MapLayout::with_pitch(0, 1, 1), buf: Vec::new(), dpr: 1.0 }
    }

    /// Chooses the grid for `cells` cells in a box `css_width` wide and at most
    /// `max_css_height` tall, in device pixels, and sets the canvas's CSS size to match.
    pub fn fit(&mut self, cells: usize, css_width: f64, max_css_height: f64) {
        self.fit_with(cells, css_width, max_css_height, MapLayout::fit);
    }

    /// Fills a box `css_width` × `css_height` with the grid (cells as square as it allows).
    pub fn fill(&mut self, cells: usize, css_width: f64, css_height: f64) {
        self.fit_with(cells, css_width, css_height, MapLayout::fill);
    }

    fn fit_with(&mut self, cells: usize, css_width: f64, css_height: f64, lay: fn(usize, u32, u32) -> MapLayout) {
        let dpr = dom::device_pixel_ratio();
        let width = (css_width * dpr).floor().max(1.0) as u32;
        let max_h = (css_height * dpr).floor().max(1.0) as u32;
        let layout = lay(cells, width, max_h);
        if layout != self.layout || dpr != self.dpr {
            self.layout = layout;
            self.dpr = dpr;
            let style = self.canvas.style();
            let w = f64::from(layout.width) / dpr;
            let h = f64::from(layout.height) / dpr;
            let _ = style.set_property("width", &format!("{w:.2}px"));
            let _ = style.set_property("height", &format!("{h:.2}px"));
        }
    }

    pub fn paint(&mut self, map: &MemoryMap, opts: &RenderOptions) -> Result<(), JsValue> {
        paint_map(&self.canvas, &map.cells, map.cell_tokens, &self.layout, opts, &mut self.buf)
    }

    /// The cell under a point given in CSS pixels relative to the canvas.
    pub fn cell_at_css(&self, x: f64, y: f64) -> Option<usize> {
        self.layout.cell_at(x * self.dpr, y * self.dpr)
    }

    /// Device pixels per CSS pixel of the last fit.
    pub fn dpr(&self) -> f64 {
        self.dpr
    }

    pub fn cell_count(&self) -> usize {
        self.layout.cells
    }
}

/// Paints the legend's sample cells (`<canvas data-swatch=…>`) with the map's own renderer, in
/// the page's theme.
pub fn paint_swatches() {
    let opts = RenderOptions { dark: super::theme::is_dark(), ..RenderOptions::default() };
    let Ok(list) = dom::document().query_selector_all("canvas[data-swatch]") else { return };
    let mut buf = Vec::new();
    for i in 0..list.length() {
        let Some(canvas) = list.item(i).and_then(|n| n.dyn_into::<HtmlCanvasElement>().ok()) else { continue };
        let kind = canvas.get_attribute("data-swatch").unwrap_or_default();
        let cell = match kind.as_str() {
            "live" => MapCell { owner: 1, live_tokens: 16, flags: 0, group: 0 },
            "partial" => MapCell { owner: 4, live_tokens: 7, flags: 0, group: 0 },
            "empty" => MapCell { owner: 1, live_tokens: 0, flags: MapCell::SLAB, group: 0 },
            "slab" => MapCell { owner: 3, live_tokens: 16, flags: MapCell::SLAB | MapCell::SLAB_START, group: 0 },
            "shared" => MapCell { owner: 5, live_tokens: 16, flags: MapCell::SHARED, group: 0 },
            "copied" => MapCell { owner: 6, live_tokens: 9, flags: MapCell::COPIED, group: 0 },
            "cached" => MapCell { owner: 0, live_tokens: 0, flags: MapCell::CACHED, group: 0 },
            "group" => MapCell { owner: 1, live_tokens: 16, flags: 0, group: 1 },
            "window" => MapCell { owner: 0, live_tokens: 0, flags: MapCell::BEHIND_WINDOW, group: 0 },
            // The host tier's band (the full lab only).
            "host-stored" if super::full_lab::FULL => MapCell { owner: 2, live_tokens: 16, flags: 0, group: 0 },
            "host-storing" if super::full_lab::FULL => MapCell { owner: 2, live_tokens: 0, flags: 0, group: 0 },
            "host-loading" if super::full_lab::FULL => {
                MapCell { owner: 2, live_tokens: 16, flags: MapCell::LOADING, group: 0 }
            }
            _ => MapCell::default(),
        };
        let layout = MapLayout::with_pitch(1, 15, 15);
        let _ = paint_map(&canvas, &[cell], 16, &layout, &opts, &mut buf);
    }
}

/// What the inspector says about cell `index` of `map` (HTML), given the owner's view.
pub fn describe_cell(
    index: usize,
    map: &MemoryMap,
    view: Option<&RequestView>,
    class_names: &[String],
    paged: bool,
) -> Vec<Node> {
    let Some(cell) = map.cells.get(index) else {
        return Vec::new();
    };
    let ct = map.cell_tokens;
    let first = index as u64 * u64::from(ct);
    let unit = if paged { "Block" } else { "Cell" };
    let mut where_ = format!(
        "{unit} {} · token slots {}–{}",
        group_thousands(index as u64),
        group_thousands(first),
        group_thousands(first + u64::from(ct) - 1)
    );
    let Some(request) = cell.request() else {
        let what = if cell.flags & MapCell::CACHED != 0 {
            "free, holding a cached prefix a later request can hit (a shared prompt, or a preempted request's own blocks)"
        } else if cell.flags & MapCell::BEHIND_WINDOW != 0 {
            "free, freed behind a sliding window or attention chunk (its tokens fell out of the layers' window)"
        } else {
            "free"
        };
        return vec![dom::node("p").class("insp-main").text(&format!("{where_}: ")).child(strong(what))];
    };
    where_.push_str(&format!(": {}/{ct} slots hold KV{}", cell.live_tokens, cell_flags(cell)));
    if paged && cell.group > 0 {
        where_.push_str(&format!(" · KV cache group {}", cell.group));
    }
    let cell_line = dom::node("p").class("insp-cell").text(&where_);
    let Some(v) = view else {
        return vec![dom::node("p").class("insp-main").child(strong(&format!("Request #{request}"))), cell_line];
    };
    let class = class_names.get(usize::from(v.class)).map_or("", String::as_str);
    let generated: u32 = v.samples.iter().map(|s| s.generated).max().unwrap_or(0);
    let main = dom::node("p")
        .class("insp-main")
        .child(strong(&format!("Request #{}", v.request)))
        .text(&format!(" · {} · class {class} · arrived {:.2} s", v.status, v.arrival_s));
    let lengths = format!(
        "Prompt {} tokens · generated {} of max_tokens {}{}{}",
        group_thousands(u64::from(v.prompt_tokens)),
        group_thousands(u64::from(generated)),
        group_thousands(u64::from(v.max_tokens)),
        if v.n > 1 { format!(" · n = {} samples", v.n) } else { String::new() },
        if v.preemptions > 0 { format!(" · preempted {}×", v.preemptions) } else { String::new() },
    );
    let mut out = vec![main, dom::node("p").text(&lengths), cell_line];
    out.extend(v.samples.iter().take(4).map(|s| describe_sample(s, v.n > 1, ct, v.prompt_tokens)));
    let more = v.samples.len().saturating_sub(4);
    if more > 0 {
        out.push(dom::node("p").text(&format!("… and {more} more samples")));
    }
    out
}

/// What a cell's flags say, each after " · " (empty when none is set).
fn cell_flags(cell: &MapCell) -> String {
    let named = [
        (MapCell::SLAB_START, "first cell of a slab"),
        (MapCell::SHARED, "shared by several sequences"),
        (MapCell::COPIED, "made by copy-on-write"),
    ];
    named.iter().filter(|(bit, _)| cell.flags & bit != 0).map(|(_, name)| format!(" · {name}")).collect()
}

/// A sample's block tables under hybrid KV cache groups: per group the blocks it holds, and how
/// many it freed behind the window (the null block's places at the table's head).
fn describe_groups(line: Node, who: &str, s: &SampleView) -> Node {
    const SHOWN: usize = 12;
    let tables: Vec<String> = s
        .kv_cache_groups
        .iter()
        .enumerate()
        .map(|(g, t)| {
            let nulls = t.iter().take_while(|&&b| b == 0).count();
            let held = &t[nulls..];
            let mut ids: Vec<String> = held.iter().take(SHOWN).map(|b| b.to_string()).collect();
            if held.len() > SHOWN {
                ids.push(format!("… +{}", held.len() - SHOWN));
            }
            let freed = if nulls > 0 { format!(" ({nulls} freed behind the window)") } else { String::new() };
            format!("group {g}{freed}: {}", ids.join(" "))
        })
        .collect();
    let head = format!(
        "{who}Block tables of {} KV cache groups ({} tokens): ",
        s.kv_cache_groups.len(),
        group_thousands(u64::from(s.kv_tokens)),
    );
    line.text(&head).child(dom::node("code").text(&tables.join(" · ")))
}

pub(super) fn strong(text: &str) -> Node {
    dom::node("strong").text(text)
}

/// One sample's memory: its slab, or its block table (in `<code>`), as a `p.insp-table`, with
/// the waste the map shows in it named as the PagedAttention paper names it: a slab's empty
/// reserved tail is reservation waste, a block table's partly filled last block internal
/// fragmentation. `block_tokens`: the paged block size; `prompt`: the request's prompt tokens.
fn describe_sample(s: &SampleView, many: bool, block_tokens: u32, prompt: u32) -> Node {
    let line = dom::node("p").class("insp-table");
    let who = if many { format!("Sample {}: ", s.seq) } else { String::new() };
    if s.finished {
        return line.text(&format!("{who}finished, its memory is freed"));
    }
    // In decode the token just sampled has no KV yet: the next step computes it.
    let pending = (prompt + s.generated).saturating_sub(s.kv_tokens);
    let newest = if pending == 1 { "the token just generated gets its KV in the next step" } else { "" };
    if let Some([start, len, live]) = s.slab {
        let pct = if len > 0 { 100.0 * f64::from(live) / f64::from(len) } else { 0.0 };
        let empty = len.saturating_sub(live);
        let waste = if empty > 0 {
            format!(
                ". Its {} empty slots are reservation waste: reserved up front for prompt + max_tokens, held until it finishes",
                group_thousands(u64::from(empty))
            )
        } else {
            String::new()
        };
        return line.text(&format!(
            "{who}Slab at slots {}–{}: {} reserved, {} hold KV ({pct:.0}%{}){waste}",
            group_thousands(u64::from(start)),
            group_thousands(u64::from(start + len.max(1) - 1)),
            group_thousands(u64::from(len)),
            group_thousands(u64::from(live)),
            if newest.is_empty() { String::new() } else { format!("; {newest}") },
        ));
    }
    if s.block_table.is_empty() {
        return line.text(&format!("{who}no KV in memory (waiting, or swapped out)"));
    }
    if !s.kv_cache_groups.is_empty() {
        return describe_groups(line, &who, s);
    }
    const SHOWN: usize = 24;
    let mut table: Vec<String> = s.block_table.iter().take(SHOWN).map(|b| b.to_string()).collect();
    if s.block_table.len() > SHOWN {
        table.push(format!("… +{}", s.block_table.len() - SHOWN));
    }
    let mut extra = String::new();
    if s.shared_blocks > 0 {
        extra.push_str(&format!(" · {} shared", s.shared_blocks));
    }
    if s.copied_blocks > 0 {
        extra.push_str(&format!(" · {} copied on write", s.copied_blocks));
    }
    let head = format!(
        "{who}Block table ({} blocks, {} tokens hold KV{}){extra}: ",
        s.block_table.len(),
        group_thousands(u64::from(s.kv_tokens)),
        if newest.is_empty() { String::new() } else { format!("; {newest}") },
    );
    let slots = s.block_table.len() as u64 * u64::from(block_tokens);
    let empty = slots.saturating_sub(u64::from(s.kv_tokens));
    let tail = if empty > 0 {
        format!(
            ". Its last block is partly filled: {} empty slots, internal fragmentation (less than one block per sequence)",
            group_thousands(empty)
        )
    } else {
        String::new()
    };
    line.text(&head).child(dom::node("code").text(&table.join(" "))).text(&tail)
}
