//! The charts under the map, drawn with plotters on canvases: allocated vs live KV tokens over
//! simulated time (the gap between the two is memory reserved but empty), and the scheduler's
//! queues (running, waiting, swapped, cumulative preemptions). Both show a time cursor; in
//! compare mode contiguous is drawn solid and paged dashed on the same axes.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;

/// The charts' font, named as the stylesheet names it. A `FontFamily` rather than the `&str`
/// plotters also takes, whose conversion lowercases the name to look for `serif` and brings
/// Unicode's case tables into the page's first module.
pub const FONT: FontFamily<'static> = FontFamily::Name("system-ui, sans-serif");
use web_sys::HtmlCanvasElement;

use crate::engine::StepPoint;
use crate::render::downsample;

use super::dom;

/// One run's data for the charts.
pub struct ChartRun<'a> {
    pub series: &'a [StepPoint],
    pub capacity_tokens: u64,
    /// Drawn dashed (the paged run in compare mode).
    pub dashed: bool,
}

/// Where the plot area of a chart lies, in CSS pixels from the canvas's left edge, so a click
/// can be turned into a time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlotBox {
    pub x0: f64,
    pub x1: f64,
    pub duration_s: f64,
}

impl PlotBox {
    pub fn time_at(&self, css_x: f64) -> Option<f64> {
        if self.x1 <= self.x0 {
            return None;
        }
        let f = ((css_x - self.x0) / (self.x1 - self.x0)).clamp(0.0, 1.0);
        Some(f * self.duration_s)
    }
}

/// The charts' colours in one theme (the page's light or dark one; see `super::theme`). The
/// series keep their hues in both, so the keys above the charts stay true.
#[derive(Clone, Copy, Debug)]
pub struct ChartTheme {
    pub background: RGBColor,
    pub allocated: RGBColor,
    pub live: RGBColor,
    allocated_fill: RGBColor,
    live_fill: RGBColor,
    pub running: RGBColor,
    pub waiting: RGBColor,
    pub swapped: RGBColor,
    pub preemptions: RGBColor,
    pub ink: RGBColor,
    pub muted: RGBColor,
    pub grid: RGBColor,
    pub axis: RGBColor,
}

pub const LIGHT: ChartTheme = ChartTheme {
    background: RGBColor(0xFF, 0xFF, 0xFF),
    allocated: RGBColor(0x8C, 0x1C, 0x2E),
    live: RGBColor(0x33, 0x6B, 0xB0),
    allocated_fill: RGBColor(0xF3, 0xDE, 0xE1),
    live_fill: RGBColor(0xCF, 0xDF, 0xF1),
    running: RGBColor(0x33, 0x6B, 0xB0),
    waiting: RGBColor(0xDD, 0x77, 0x22),
    swapped: RGBColor(0xAA, 0x33, 0x77),
    preemptions: RGBColor(0x22, 0x22, 0x22),
    ink: RGBColor(0x1E, 0x23, 0x2E),
    muted: RGBColor(0x5B, 0x64, 0x73),
    grid: RGBColor(0xEC, 0xEE, 0xF2),
    axis: RGBColor(0xB4, 0xBA, 0xC4),
};

/// Dark: the same hues lifted for a dark background (the page's panel colour); "allocated but
/// empty" is still a dark red area under a lighter red line.
pub const DARK: ChartTheme = ChartTheme {
    background: RGBColor(0x17, 0x1C, 0x23),
    allocated: RGBColor(0xE0, 0x60, 0x6F),
    live: RGBColor(0x6F, 0xA0, 0xE0),
    allocated_fill: RGBColor(0x4A, 0x1C, 0x25),
    live_fill: RGBColor(0x1F, 0x33, 0x4D),
    running: RGBColor(0x6F, 0xA0, 0xE0),
    waiting: RGBColor(0xEE, 0x99, 0x44),
    swapped: RGBColor(0xCC, 0x66, 0xAA),
    preemptions: RGBColor(0xE3, 0xE8, 0xEF),
    ink: RGBColor(0xE3, 0xE8, 0xEF),
    muted: RGBColor(0x9A, 0xA4, 0xB2),
    grid: RGBColor(0x25, 0x2C, 0x35),
    axis: RGBColor(0x4A, 0x53, 0x60),
};

impl ChartTheme {
    pub fn of(dark: bool) -> &'static ChartTheme {
        if dark {
            &DARK
        } else {
            &LIGHT
        }
    }
}

pub type Area = DrawingArea<CanvasBackend, Shift>;
/// (key, colour, value of a sample) of one queue series.
type QueueSeries = (&'static str, RGBColor, fn(&StepPoint) -> u32);

/// Matches the canvas's pixel size to its CSS box (device pixels); returns the ratio used.
pub fn size_canvas(canvas: &HtmlCanvasElement) -> f64 {
    let dpr = dom::device_pixel_ratio();
    let w = (f64::from(canvas.client_width().max(1)) * dpr).round() as u32;
    let h = (f64::from(canvas.client_height().max(1)) * dpr).round() as u32;
    if canvas.width() != w {
        canvas.set_width(w);
    }
    if canvas.height() != h {
        canvas.set_height(h);
    }
    dpr
}

pub fn area(canvas: &HtmlCanvasElement, theme: &ChartTheme) -> Result<Area, String> {
    let backend = CanvasBackend::with_canvas_object(canvas.clone()).ok_or("the chart canvas has no 2d context")?;
    let root = backend.into_drawing_area();
    root.fill(&theme.background).map_err(|e| format!("{e:?}"))?;
    Ok(root)
}

/// As many y labels as the chart's height holds (one per 18 CSS pixels), at most `max`.
fn y_labels(canvas: &HtmlCanvasElement, max: usize) -> usize {
    let rows = (f64::from(canvas.client_height()) - 36.0) / 18.0;
    (rows.floor().max(1.0) as usize + 1).min(max)
}

pub fn px(v: f64, dpr: f64) -> u32 {
    (v * dpr).round() as u32
}

/// A series as chart points from 0 s, held level from its last step to the time cursor (the
/// step under way has not ended, so it is not drawn).
fn points(series: &[StepPoint], cursor_s: f64, f: impl Fn(&StepPoint) -> f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(series.len() + 2);
    out.push((0.0, series.first().map_or(0.0, &f)));
    out.extend(series.iter().map(|s| (s.t_us as f64 / 1e6, f(s))));
    if let Some(&(t, v)) = out.last() {
        if t < cursor_s {
            out.push((cursor_s, v));
        }
    }
    out
}

/// The frame both charts share: simulated seconds across, a light grid, muted labels.
struct Axes {
    /// Top margin and x-label band, CSS pixels.
    top: f64,
    x_area: f64,
    duration_s: f64,
    y_max: f64,
    y_labels: usize,
    theme: &'static ChartTheme,
}

type TimeChart<'a> = ChartContext<'a, CanvasBackend, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

fn time_axes<'a>(root: &'a Area, dpr: f64, a: Axes, y_fmt: &dyn Fn(&f64) -> String) -> Result<TimeChart<'a>, String> {
    let err = |e: DrawingAreaErrorKind<_>| format!("{e:?}");
    let mut chart = ChartBuilder::on(root)
        .margin_top(px(a.top, dpr))
        .margin_right(px(14.0, dpr))
        .margin_left(px(4.0, dpr))
        .x_label_area_size(px(a.x_area, dpr))
        .y_label_area_size(px(48.0, dpr))
        .build_cartesian_2d(0f64..a.duration_s, 0f64..a.y_max)
        .map_err(err)?;
    let t = a.theme;
    let font = (FONT, 11.5 * dpr).into_font().color(&t.muted);
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(t.grid)
        .axis_style(t.axis)
        .x_labels(7)
        .y_labels(a.y_labels)
        .x_label_formatter(&|v| format!("{v:.0} s"))
        .y_label_formatter(y_fmt)
        .label_style(font)
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// Allocated vs live KV tokens.
pub fn draw_kv(
    canvas: &HtmlCanvasElement,
    runs: &[ChartRun<'_>],
    duration_s: f64,
    cursor_s: f64,
    theme: &'static ChartTheme,
) -> Result<PlotBox, String> {
    let dpr = size_canvas(canvas);
    let root = area(canvas, theme)?;
    let capacity = runs.iter().map(|r| r.capacity_tokens).max().unwrap_or(1).max(1) as f64;
    let y_fmt = |v: &f64| if *v >= 1000.0 { format!("{:.0}k", v / 1000.0) } else { format!("{v:.0}") };
    let mut chart = time_axes(
        &root,
        dpr,
        Axes { top: 15.0, x_area: 22.0, duration_s, y_max: capacity * 1.04, y_labels: y_labels(canvas, 5), theme },
        &y_fmt,
    )?;
    let err = |e: DrawingAreaErrorKind<_>| format!("{e:?}");
    let width = canvas.width() as usize;
    let solo = runs.len() == 1;
    for run in runs {
        let s = downsample(run.series, (duration_s * 1e6) as u64, width.max(2));
        let alloc = points(&s, cursor_s, |x| x.allocated_tokens as f64);
        let live = points(&s, cursor_s, |x| x.live_tokens as f64);
        if solo {
            // Opaque fills: pink is memory allocated but empty, blue memory holding tokens.
            for (pts, fill) in [(&alloc, theme.allocated_fill), (&live, theme.live_fill)] {
                let mut poly = pts.clone();
                if let Some(&(t, _)) = pts.last() {
                    poly.push((t, 0.0));
                    poly.push((0.0, 0.0));
                }
                chart.draw_series(std::iter::once(Polygon::new(poly, fill.filled()))).map_err(err)?;
            }
        }
        for (pts, colour) in [(alloc, theme.allocated), (live, theme.live)] {
            let style = colour.stroke_width(px(if run.dashed { 1.6 } else { 2.0 }, dpr).max(1));
            draw_line(&mut chart, pts, style, run.dashed, dpr)?;
        }
    }
    // Capacity and the time cursor.
    let cap_style = theme.axis.stroke_width(px(1.0, dpr).max(1));
    chart
        .draw_series(std::iter::once(DashedPathElement::new(
            vec![(0.0, capacity), (duration_s, capacity)],
            px(4.0, dpr),
            px(4.0, dpr),
            cap_style,
        )))
        .map_err(err)?;
    // The capacity's figure sits in the margin above the plot, right-aligned, so it never
    // covers the lines (which reach the capacity when the pool is full).
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let label = (FONT, 11.0 * dpr).into_font().color(&theme.muted).pos(Pos::new(HPos::Right, VPos::Bottom));
    root.draw(&Text::new(
        format!("capacity {} tokens", crate::engine::plan::group_thousands(capacity as u64)),
        (xs.end, ys.start - px(2.0, dpr) as i32),
        label,
    ))
    .map_err(err)?;
    draw_cursor(&mut chart, cursor_s, capacity * 1.04, dpr, theme)?;
    Ok(plot_box(&chart, dpr, duration_s))
}

/// Running, waiting and swapped sequence groups, and cumulative preemptions.
pub fn draw_queues(
    canvas: &HtmlCanvasElement,
    runs: &[ChartRun<'_>],
    duration_s: f64,
    cursor_s: f64,
    hidden: &[String],
    theme: &'static ChartTheme,
) -> Result<PlotBox, String> {
    let dpr = size_canvas(canvas);
    let root = area(canvas, theme)?;
    let shown = |k: &str| !hidden.iter().any(|h| h == k);
    let series: [QueueSeries; 4] = [
        ("running", theme.running, |s| s.running),
        ("waiting", theme.waiting, |s| s.waiting),
        ("swapped", theme.swapped, |s| s.swapped),
        ("preemptions", theme.preemptions, |s| s.preemptions),
    ];
    let y_max = runs
        .iter()
        .flat_map(|r| r.series.iter())
        .map(|s| series.iter().filter(|(k, _, _)| shown(k)).map(|(_, _, f)| f(s)).max().unwrap_or(0))
        .max()
        .unwrap_or(0)
        .max(4) as f64
        * 1.1;
    let y_fmt = |v: &f64| format!("{v:.0}");
    let mut chart = time_axes(
        &root,
        dpr,
        Axes { top: 8.0, x_area: 22.0, duration_s, y_max, y_labels: y_labels(canvas, 4), theme },
        &y_fmt,
    )?;
    let width = canvas.width() as usize;
    for run in runs {
        let s = downsample(run.series, (duration_s * 1e6) as u64, width.max(2));
        for (key, colour, f) in series.iter() {
            if !shown(key) {
                continue;
            }
            let pts = points(&s, cursor_s, |x| f64::from(f(x)));
            let style = colour.stroke_width(px(1.6, dpr).max(1));
            draw_line(&mut chart, pts, style, run.dashed, dpr)?;
        }
    }
    draw_cursor(&mut chart, cursor_s, y_max, dpr, theme)?;
    Ok(plot_box(&chart, dpr, duration_s))
}

/// One series as a line: solid, or dashed for the paged run in compare mode.
fn draw_line(
    chart: &mut TimeChart<'_>,
    pts: Vec<(f64, f64)>,
    style: ShapeStyle,
    dashed: bool,
    dpr: f64,
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| format!("{e:?}");
    if dashed {
        chart
            .draw_series(std::iter::once(DashedPathElement::new(pts, px(6.0, dpr), px(4.0, dpr), style)))
            .map_err(err)?;
    } else {
        chart.draw_series(std::iter::once(PathElement::new(pts, style))).map_err(err)?;
    }
    Ok(())
}

fn draw_cursor(
    chart: &mut ChartContext<
        '_,
        CanvasBackend,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    cursor_s: f64,
    y_max: f64,
    dpr: f64,
    theme: &ChartTheme,
) -> Result<(), String> {
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(cursor_s, 0.0), (cursor_s, y_max)],
            theme.ink.mix(0.75).stroke_width(px(1.5, dpr).max(1)),
        )))
        .map_err(|e| format!("{e:?}"))?;
    Ok(())
}

fn plot_box(
    chart: &ChartContext<
        '_,
        CanvasBackend,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    dpr: f64,
    duration_s: f64,
) -> PlotBox {
    let (xr, _) = chart.plotting_area().get_pixel_range();
    PlotBox { x0: f64::from(xr.start) / dpr, x1: f64::from(xr.end) / dpr, duration_s }
}
