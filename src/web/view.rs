//! Draws a `Lab` into the page: the memory map(s), the inspector, the charts, the metrics and
//! the transport bar. `View::render` is the whole frame; the parts skip work when nothing they
//! show has changed (same time, same hover, same size).

use wasm_bindgen::JsCast;
use web_sys::{HtmlCanvasElement, HtmlElement, HtmlInputElement, HtmlSelectElement};

use crate::engine::memory_map::MapCell;
use crate::engine::MemoryMap;
use crate::render::RenderOptions;

use super::chart::{self, ChartRun, PlotBox};
use super::dom;
use super::host_tier::{self, HostBands};
use super::map::{self, MapView};
use super::metrics::{MetricsInput, MetricsView};
use super::mission_view::MissionView;
use super::storage::Stars;
use crate::session::lab::Lab;
use crate::session::run::Panel;

/// A cell the learner points at: (run index, cell index).
pub type CellRef = (usize, usize);

pub struct View {
    pub maps: Vec<MapView>,
    /// The host-memory KV tier's band under each map (the full lab only: the first module runs
    /// no tier, and no field: read through [`View::hosts`]).
    #[cfg(feature = "panels")]
    hosts: Option<HostBands>,
    map_panels: Vec<HtmlElement>,
    map_titles: Vec<HtmlElement>,
    map_subs: Vec<HtmlElement>,
    maps_box: HtmlElement,
    inspector: HtmlElement,
    pub kv_chart: HtmlCanvasElement,
    pub queue_chart: HtmlCanvasElement,
    pub kv_box: PlotBox,
    pub queue_box: PlotBox,
    metrics: MetricsView,
    pub mission: Option<MissionView>,
    play_btn: HtmlElement,
    scrubber: HtmlInputElement,
    time_label: HtmlElement,
    speed: HtmlSelectElement,
    root: HtmlElement,
    /// Cell under the pointer, a pinned (tapped) cell, the keyboard cursor.
    pub hover: Option<CellRef>,
    pub pinned: Option<CellRef>,
    pub cursor: Option<CellRef>,
    /// Set when sizes must be recomputed (resize, new runs).
    pub layout_dirty: bool,
    /// The page is dark (read from the stylesheet at each layout; see `super::theme`).
    pub dark: bool,
    /// Embedded: the maps' boxes at the last fit.
    fitted_boxes: Vec<(i32, i32)>,
    /// What the inspector last described: a cell (of a host band when `true`) at a time.
    last_inspected: Option<(CellRef, bool, u64)>,
    /// The kinds of cell (`MapCell` flags, and `GROUP_SEEN` for a later KV cache group) the
    /// shown runs have drawn since their setup was loaded: the legend lists only those.
    legend_kinds: u8,
    /// The kinds the legend lists now (None: not yet set for this setup).
    legend_listed: Option<u8>,
    last_chart: Option<(u64, usize, usize, Vec<String>, u32, u32)>,
}

impl View {
    pub fn new(stars: Stars) -> Result<View, String> {
        let maps_box: HtmlElement = dom::need("maps")?;
        // The full lab draws a fleet's replicas too: panels cloned from the second run's.
        #[cfg(feature = "panels")]
        super::fleet_view::add_panels(&maps_box)?;
        #[cfg(feature = "panels")]
        let n = super::fleet_view::MAX_PANELS;
        #[cfg(not(feature = "panels"))]
        let n = 2;
        let maps = (0..n)
            .map(|i| dom::need::<HtmlCanvasElement>(&format!("map-{i}")).map(MapView::new))
            .collect::<Result<_, _>>()?;
        let list = |prefix: &str| {
            (0..n).map(|i| dom::need::<HtmlElement>(&format!("{prefix}-{i}"))).collect::<Result<Vec<_>, _>>()
        };
        Ok(View {
            maps,
            #[cfg(feature = "panels")]
            hosts: Some(HostBands::new()?),
            map_panels: list("map-panel")?,
            map_titles: list("map-title")?,
            map_subs: list("map-sub")?,
            maps_box,
            inspector: dom::need("inspector")?,
            kv_chart: dom::need("chart-kv")?,
            queue_chart: dom::need("chart-queues")?,
            kv_box: PlotBox::default(),
            queue_box: PlotBox::default(),
            metrics: MetricsView::new()?,
            mission: MissionView::new(stars),
            play_btn: dom::need("play-btn")?,
            scrubber: dom::need("scrubber")?,
            time_label: dom::need("time-label")?,
            speed: dom::need("speed-select")?,
            root: dom::need("kvlab")?,
            hover: None,
            pinned: None,
            cursor: None,
            layout_dirty: true,
            dark: false,
            fitted_boxes: Vec::new(),
            last_inspected: None,
            legend_kinds: 0,
            legend_listed: None,
            last_chart: None,
        })
    }

    /// The host bands, in the full lab (None in the first module, as a constant).
    pub fn hosts(&self) -> Option<&HostBands> {
        #[cfg(feature = "panels")]
        return self.hosts.as_ref();
        #[cfg(not(feature = "panels"))]
        None
    }

    pub fn hosts_mut(&mut self) -> Option<&mut HostBands> {
        #[cfg(feature = "panels")]
        return self.hosts.as_mut();
        #[cfg(not(feature = "panels"))]
        None
    }

    /// The cell the inspector describes: the pinned one, else the hovered one, else the cursor.
    pub fn focus_cell(&self) -> Option<CellRef> {
        self.pinned.or(self.hover).or(self.cursor)
    }

    /// Forces every part to redraw on the next frame.
    pub fn invalidate(&mut self) {
        self.layout_dirty = true;
        self.last_inspected = None;
        self.legend_kinds = 0;
        self.legend_listed = None;
        self.last_chart = None;
        if let Some(m) = &mut self.mission {
            m.invalidate();
        }
    }

    /// Forces the charts and the inspector to redraw (the layout stays).
    pub fn invalidate_content(&mut self) {
        self.last_inspected = None;
        self.last_chart = None;
    }

    /// The largest map height the full lab gives a map (the embed's maps fill their box).
    fn max_map_height(&self) -> f64 {
        let vh = dom::window().inner_height().ok().and_then(|v| v.as_f64()).unwrap_or(800.0);
        (vh * 0.40).clamp(160.0, 460.0)
    }

    /// The maps' boxes (CSS pixels), to refit when one changed size since the last fit even if
    /// no resize notification said so.
    fn map_boxes(&self, shown: usize) -> Vec<(i32, i32)> {
        self.maps
            .iter()
            .take(shown)
            .filter_map(|m| m.canvas.parent_element())
            .map(|w| (w.client_width(), w.client_height()))
            .collect()
    }

    /// Embedded, the stylesheet sizes each map's box to what the frame leaves, and each map
    /// fills its box (`MapLayout::fill`: cells as square as the grid allows, a pixel wider or
    /// taller than their neighbours where the box does not divide evenly).
    fn fit_embedded(&mut self, maps: &[MemoryMap]) {
        for (i, m) in maps.iter().enumerate().take(self.maps.len()) {
            let Some(wrap) = self.maps[i].canvas.parent_element() else { continue };
            let (w, h) = (wrap.client_width().max(1), wrap.client_height().max(1));
            self.maps[i].fill(m.cells.len(), f64::from(w), f64::from(h));
        }
    }

    /// Lists in the legend the kinds of cell the runs have drawn since their setup was loaded
    /// (shared, copy-on-write, cached-prefix, later-group and freed-behind-a-window cells), so
    /// a run with none of them lists none; an entry, once drawn, stays while the setup does.
    fn show_legend_kinds(&mut self, maps: &[MemoryMap]) {
        const GROUP_SEEN: u8 = 128;
        let kinds = maps
            .iter()
            .flat_map(|m| &m.cells)
            .fold(self.legend_kinds, |k, c| k | c.flags | if c.group > 0 { GROUP_SEEN } else { 0 });
        self.legend_kinds = kinds;
        if self.legend_listed == Some(kinds) {
            return;
        }
        self.legend_listed = Some(kinds);
        let named = [
            ("shared", MapCell::SHARED),
            ("copied", MapCell::COPIED),
            ("cached", MapCell::CACHED),
            ("group", GROUP_SEEN),
            ("window", MapCell::BEHIND_WINDOW),
        ];
        for (kind, bit) in named {
            let li = dom::document().query_selector(&format!("#map-legend li[data-kind='{kind}']"));
            if let Some(li) = li.ok().flatten().and_then(|e| e.dyn_into::<HtmlElement>().ok()) {
                dom::set_hidden(&li, kinds & bit == 0);
            }
        }
    }

    /// The whole frame.
    pub fn render(&mut self, lab: &Lab) {
        // Classes that change the boxes' sizes first, then measure.
        let compare = lab.runs.len() > 1;
        let panels = lab.panels();
        dom::toggle_class(&self.root, "comparing", compare);
        // A mission setup vLLM refused to start has no run: the stage says so (lab.css).
        dom::toggle_class(&self.root, "refused", lab.refusal.is_some());
        dom::toggle_class(&self.maps_box, "two", compare);
        for (i, panel) in self.map_panels.iter().enumerate() {
            dom::set_hidden(panel, i >= panels.len());
        }
        // A fleet's maps in rows (the full lab's): the height a map may take is shared by them.
        #[cfg(feature = "panels")]
        let rows = super::fleet_view::show(lab, &self.maps_box, &self.map_panels);
        #[cfg(not(feature = "panels"))]
        let rows = 1.0;
        // The legend lists only what the shown allocators can draw (slabs, or shared blocks).
        let paged = lab.runs.iter().filter(|r| r.is_paged()).count();
        let kinds = match (paged, lab.runs.len() - paged) {
            (0, _) => "contiguous",
            (_, 0) => "paged",
            _ => "both",
        };
        if self.root.get_attribute("data-allocators").as_deref() != Some(kinds) {
            let _ = self.root.set_attribute("data-allocators", kinds);
        }
        let maps: Vec<MemoryMap> = panels.iter().map(|p| p.sim.memory_map()).collect();
        self.show_legend_kinds(&maps);
        let boxes = if lab.options.embed { self.map_boxes(maps.len()) } else { Vec::new() };
        if self.layout_dirty
            || boxes != self.fitted_boxes
            || maps.iter().zip(&self.maps).any(|(m, v)| m.cells.len() != v.cell_count())
        {
            self.dark = super::theme::is_dark();
            if lab.options.embed {
                self.fit_embedded(&maps);
                self.fitted_boxes = self.map_boxes(maps.len());
            } else {
                let max_h = (self.max_map_height() / rows).max(120.0);
                for (i, m) in maps.iter().enumerate() {
                    let width = self.maps[i].canvas.parent_element().map_or(600, |w| w.client_width()).max(60);
                    self.maps[i].fit(m.cells.len(), f64::from(width), max_h);
                }
            }
            self.layout_dirty = false;
            self.last_chart = None;
        }
        let host_maps = self.hosts().map(|h| h.maps(&panels)).unwrap_or_default();
        let relayout = self.last_chart.is_none();
        self.render_maps(&panels, &maps, &host_maps, relayout);
        self.render_inspector(lab, &panels, &maps, &host_maps);
        self.render_charts(lab);
        self.render_metrics(lab);
        self.render_transport(lab);
        self.render_mission(lab);
    }

    fn render_mission(&mut self, lab: &Lab) {
        if !super::full_lab::FULL {
            return; // missions are the full module's: the panel stays hidden as served
        }
        let Some(view) = &mut self.mission else { return };
        let due = lab.mission.is_some() && view.last_key != Some(lab.t_us);
        let status = if due { lab.mission_status() } else { None };
        if due {
            view.last_key = Some(lab.t_us);
        }
        view.render(lab, status.as_ref());
    }

    fn render_maps(
        &mut self,
        panels: &[Panel<'_>],
        maps: &[MemoryMap],
        host_maps: &[Option<MemoryMap>],
        relayout: bool,
    ) {
        let focus = self.focus_cell();
        // The request under the pointer on either map is framed on both (a fleet's replicas
        // number their requests apart: only on its own).
        let highlight = focus
            .and_then(|(run, cell)| maps.get(run)?.cells.get(cell))
            .map(|c| c.owner)
            .filter(|&o| o != 0)
            .or_else(|| self.hosts()?.hovered_owner(host_maps));
        let dark = self.dark;
        if let Some(h) = self.hosts_mut() {
            h.render(host_maps, highlight, dark, relayout);
        }
        for (i, (panel, m)) in panels.iter().zip(maps).enumerate() {
            let title = panel.title();
            dom::set_text(&self.map_titles[i], &title);
            if self.map_titles[i].title() != title {
                self.map_titles[i].set_title(&title);
            }
            let sub = format!(
                "{} cells × {} tokens",
                crate::engine::plan::group_thousands(m.cells.len() as u64),
                m.cell_tokens
            );
            dom::set_text(&self.map_subs[i], &sub);
            let own = panel.replica.is_none() || focus.is_some_and(|f| f.0 == i);
            let opts = RenderOptions {
                highlight_owner: highlight.filter(|_| own),
                cursor: self.cursor.filter(|c| c.0 == i).map(|c| c.1),
                dark: self.dark,
            };
            if let Err(e) = self.maps[i].paint(m, &opts) {
                web_sys::console::error_2(&"map paint failed".into(), &e);
            }
        }
    }

    fn render_inspector(
        &mut self,
        lab: &Lab,
        panels: &[Panel<'_>],
        maps: &[MemoryMap],
        host_maps: &[Option<MemoryMap>],
    ) {
        // Screen readers hear the inspector when the learner moves over the map, not every
        // frame of playback: it is a live region only while paused.
        let live = if lab.playing { "off" } else { "polite" };
        if self.inspector.get_attribute("aria-live").as_deref() != Some(live) {
            let _ = self.inspector.set_attribute("aria-live", live);
        }
        // A cell of a map no longer shown (Compare turned off) is let go (a hidden map fires no
        // `mouseleave`; a pointer moving anywhere but a map lets go too: `events.rs`).
        let shown = panels.len();
        self.pinned = self.pinned.filter(|c| c.0 < shown);
        self.cursor = self.cursor.filter(|c| c.0 < shown);
        self.hover = self.hover.filter(|c| c.0 < shown);
        let host_hover = self.hosts().and_then(|h| h.hover).filter(|h| h.0 < shown);
        if let (None, Some((run_i, cell_i))) = (self.focus_cell(), host_hover) {
            self.inspect_host_chunk(panels, host_maps, run_i, cell_i);
            return;
        }
        let Some((run_i, cell_i)) = self.focus_cell() else {
            if self.last_inspected.take().is_some() {
                let hint =
                    "Hover or tap a cell (or focus the map and use the arrow keys) to see the request that owns it.";
                dom::replace_children(&self.inspector, [dom::node("p").class("insp-hint").text(hint)]);
            }
            return;
        };
        let key = ((run_i, cell_i), false, panels.get(run_i).map_or(0, |p| p.sim.now_us()));
        if self.last_inspected == Some(key) {
            return;
        }
        self.last_inspected = Some(key);
        let (Some(p), Some(m)) = (panels.get(run_i), maps.get(run_i)) else { return };
        let view = m.cells.get(cell_i).and_then(|c| c.request()).and_then(|r| p.sim.request_view(r));
        let mut parts = Vec::new();
        if panels.len() > 1 {
            parts.push(dom::node("p").class("insp-run").text(&p.title()));
        }
        parts.extend(map::describe_cell(cell_i, m, view.as_ref(), &p.run.class_names, p.run.is_paged()));
        if self.pinned.is_some() {
            let hint = "Pinned: tap the map again or press Escape to release.";
            parts.push(dom::node("p").class("insp-hint").text(hint));
        }
        dom::replace_children(&self.inspector, parts);
    }

    /// The inspector on the host band's cell `cell_i` of run `run_i`.
    fn inspect_host_chunk(
        &mut self,
        panels: &[Panel<'_>],
        host_maps: &[Option<MemoryMap>],
        run_i: usize,
        cell_i: usize,
    ) {
        let (Some(p), Some(Some(m))) = (panels.get(run_i), host_maps.get(run_i)) else { return };
        let key = ((run_i, cell_i), true, p.sim.now_us());
        if self.last_inspected == Some(key) {
            return;
        }
        self.last_inspected = Some(key);
        let view = m.cells.get(cell_i).and_then(|c| c.request()).and_then(|r| p.sim.request_view(r));
        let mut parts = Vec::new();
        if panels.len() > 1 {
            parts.push(dom::node("p").class("insp-run").text(&p.title()));
        }
        let block_size = p.sim.kv().block_tokens() as u32;
        parts.extend(host_tier::describe_chunk(cell_i, m, view.as_ref(), block_size));
        dom::replace_children(&self.inspector, parts);
    }

    pub fn render_charts(&mut self, lab: &Lab) {
        let duration_s = lab.duration_us() as f64 / 1e6;
        let lens: usize = lab.runs.iter().map(|r| r.chart_series().len()).sum();
        let key = (
            lab.t_us,
            lens,
            lab.runs.len(),
            lab.state.hidden.clone(),
            self.kv_chart.client_width() as u32,
            self.queue_chart.client_width() as u32,
        );
        if self.last_chart.as_ref() == Some(&key) {
            return;
        }
        self.last_chart = Some(key);
        let compare = lab.runs.len() > 1;
        let runs: Vec<ChartRun<'_>> = lab
            .runs
            .iter()
            .map(|r| ChartRun {
                series: r.chart_series(),
                capacity_tokens: r.capacity_tokens(),
                dashed: compare && r.is_paged(),
            })
            .collect();
        let cursor = lab.t_us as f64 / 1e6;
        let theme = chart::ChartTheme::of(self.dark);
        // A chart the stylesheet hides (embed mode, ?panels=) is not drawn: on a canvas with no
        // box plotters would measure its labels with a styled <span>, which the page's
        // Content-Security-Policy (no inline style) refuses.
        if self.kv_chart.client_width() > 0 {
            match chart::draw_kv(&self.kv_chart, &runs, duration_s, cursor, theme) {
                Ok(b) => self.kv_box = b,
                Err(e) => web_sys::console::error_1(&format!("chart: {e}").into()),
            }
        }
        if self.queue_chart.client_width() > 0 {
            match chart::draw_queues(&self.queue_chart, &runs, duration_s, cursor, &lab.state.hidden, theme) {
                Ok(b) => self.queue_box = b,
                Err(e) => web_sys::console::error_1(&format!("chart: {e}").into()),
            }
        }
    }

    pub fn render_metrics(&mut self, lab: &Lab) {
        let reports: Vec<_> = lab.runs.iter().map(|r| r.report()).collect();
        let inputs: Vec<MetricsInput<'_>> = lab
            .runs
            .iter()
            .zip(&reports)
            .map(|(r, rep)| MetricsInput {
                label: r.label,
                report: rep,
                #[cfg(feature = "kernel-clock")]
                on_kernels: r.on_kernels(),
                last: r.last_sample(),
                elapsed_s: lab.t_us as f64 / 1e6,
                duration_s: lab.duration_us() as f64 / 1e6,
            })
            .collect();
        self.metrics.update(&inputs);
        // Why requests wait, when the queue's head was not admitted (the first run that says so).
        if let Some(el) = dom::by_id::<web_sys::HtmlElement>("queue-note") {
            let compare = lab.runs.len() > 1;
            let note = lab
                .runs
                .iter()
                .find_map(|r| r.queue_note().map(|n| if compare { format!("[{}] {n}", r.label) } else { n }));
            if el.text_content().as_deref() != note.as_deref().or(Some("")) {
                dom::set_text(&el, note.as_deref().unwrap_or(""));
            }
            dom::set_hidden(&el, note.is_none());
        }
    }

    fn render_transport(&mut self, lab: &Lab) {
        let duration_s = lab.duration_us() as f64 / 1e6;
        let t = lab.t_us as f64 / 1e6;
        let max = format!("{duration_s}");
        if self.scrubber.max() != max {
            self.scrubber.set_max(&max);
        }
        let value = format!("{t:.1}");
        if self.scrubber.value() != value {
            self.scrubber.set_value(&value);
        }
        let _ = self.scrubber.set_attribute("aria-valuetext", &format!("{t:.1} seconds of {duration_s:.0}"));
        dom::set_text(&self.time_label, &format!("{t:.1} s / {duration_s:.0} s"));
        let (icon, label) = if lab.playing { ("❚❚", "Pause") } else { ("▶", "Play") };
        if let Ok(Some(i)) = self.play_btn.query_selector(".icon") {
            dom::set_text(&i, icon);
        }
        if let Ok(Some(l)) = self.play_btn.query_selector(".label") {
            dom::set_text(&l, label);
        }
        let _ = self.play_btn.set_attribute("aria-pressed", if lab.playing { "true" } else { "false" });
        let speed = lab.speed.to_string();
        if self.speed.value() != speed {
            self.speed.set_value(&speed);
        }
        let state = if lab.playing {
            "playing"
        } else if lab.is_at_end() {
            "done"
        } else {
            "paused"
        };
        if self.root.get_attribute("data-state").as_deref() != Some(state) {
            let _ = self.root.set_attribute("data-state", state);
        }
    }
}
