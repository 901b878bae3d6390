//! Pure drawing logic of the browser lab, compiled on every target so that native tests check it
//! too: the colour-blind-safe palette, the memory-map grid (layout, hit-testing) and the
//! function that turns the engine's `MemoryMap` cells into one RGBA buffer (the page hands it
//! to the canvas as a single `ImageData`), plus the chart's downsampling and the CSV export.
//! Nothing here touches the DOM or the clock.

use crate::engine::{MapCell, StepPoint};

mod layout;
pub use layout::{MapLayout, MAX_PITCH};

mod colours;
pub use colours::{mix, mix_w, owner_colour, palette, MapTheme, Rgba};

/// Smallest cell side (device pixels) that gets the "allocated, empty" hatch.
pub const HATCH_FROM: u32 = 5;

/// The weight of the background in a faded cell (78%).
const FADE_W: u32 = 200;

/// What to emphasise when drawing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// Draw this owner (request id + 1, as in `MapCell::owner`) at full strength and framed,
    /// fade the rest.
    pub highlight_owner: Option<u32>,
    /// Outline this cell (keyboard cursor).
    pub cursor: Option<usize>,
    /// Draw with [`MapTheme::DARK`] (a dark page) instead of [`MapTheme::LIGHT`].
    pub dark: bool,
}

/// The colour a whole cell shows when it is too small for detail (pitch under 3 px), and the
/// base colour of its filled part otherwise.
pub fn cell_colour(c: &MapCell, cell_tokens: u32) -> Rgba {
    cell_colour_in(c, cell_tokens, &MapTheme::LIGHT)
}

/// [`cell_colour`] in a theme.
pub fn cell_colour_in(c: &MapCell, cell_tokens: u32, theme: &MapTheme) -> Rgba {
    match c.request() {
        None if c.flags & MapCell::CACHED != 0 => mix_w(theme.free, palette::CACHED, 90),
        None if c.flags & MapCell::BEHIND_WINDOW != 0 => mix_w(theme.free, palette::BEHIND_WINDOW, 90),
        None => theme.free,
        Some(r) => {
            let ct = cell_tokens.max(1);
            let live = u32::from(c.live_tokens);
            let owner = group_shade(owner_colour(r), c.group);
            if live == 0 {
                theme.empty
            } else if live >= ct {
                owner
            } else {
                // 35% of the owner's colour for a first token, up to 100% for a full cell.
                mix_w(theme.empty, owner, 90 + 166 * live / ct)
            }
        }
    }
}

/// A request's colour in KV cache group `group` (hybrid models): group 0 as it is, each later
/// group a step darker, so one request's blocks in its groups read as one hue in shades.
pub fn group_shade(owner: Rgba, group: u8) -> Rgba {
    const INK_W: [u32; 8] = [0, 70, 115, 145, 170, 190, 205, 215];
    mix_w(owner, palette::INK, INK_W[usize::from(group.min(7))])
}

/// Rows of a `size`-pixel cell that show live tokens (bottom-up): at least one when any token
/// is live, all of them only when the cell is full.
pub fn filled_rows(live: u16, cell_tokens: u32, size: u32) -> u32 {
    if live == 0 {
        return 0;
    }
    let ct = cell_tokens.max(1);
    if u32::from(live) >= ct {
        return size;
    }
    let rows = (u64::from(live) * u64::from(size)).div_ceil(u64::from(ct)) as u32;
    rows.clamp(1, size.saturating_sub(1).max(1))
}

/// Draws the memory map into `buf` (resized to `layout.width × layout.height × 4` bytes, RGBA).
/// Each cell: neutral when free (a teal dot when it holds a cached prefix); otherwise its live
/// share is filled bottom-up in the owner's colour over dark red (allocated, empty; hatched);
/// a dark bar on the left edge marks the first cell of a contiguous slab, a dark dot a block
/// shared by several sequences, a white dot a copy-on-write copy, a dark bar across the middle a
/// host tier's chunk being loaded to the GPU.
pub fn render_map(cells: &[MapCell], cell_tokens: u32, layout: &MapLayout, opts: &RenderOptions, buf: &mut Vec<u8>) {
    let (w, h) = (layout.width as usize, layout.height as usize);
    buf.clear();
    buf.resize(w * h * 4, 0);
    let theme = MapTheme::of(opts.dark);
    let n = cells.len().min(layout.cells);
    // With one pixel a cell the cells cover the first `n` pixels and the background the rest.
    let one_pixel_cells = layout.pitch == 1 && layout.width == layout.cols && layout.height == layout.rows;
    let background_from = if one_pixel_cells { (n * 4).min(buf.len()) } else { 0 };
    for px in buf[background_from..].chunks_exact_mut(4) {
        px.copy_from_slice(&theme.background);
    }
    let mut canvas = Pixels { buf, stride: w, height: h, theme };
    if one_pixel_cells {
        draw_pixels(&mut canvas, &cells[..n], cell_tokens, opts);
    } else {
        draw_cells(&mut canvas, &cells[..n], cell_tokens, layout, opts);
    }
    if let Some(i) = opts.cursor.filter(|&i| i < n) {
        canvas.cursor(layout.rect(i));
    }
}

/// Each cell in its rectangle of `layout`.
fn draw_cells(canvas: &mut Pixels<'_>, cells: &[MapCell], cell_tokens: u32, layout: &MapLayout, opts: &RenderOptions) {
    for (i, c) in cells.iter().enumerate() {
        let (x, y, w, h) = layout.rect(i);
        let faded = opts.highlight_owner.is_some_and(|owner| c.owner != owner);
        draw_cell(canvas, (x, y, w, h), c, cell_tokens, faded);
        if opts.highlight_owner.is_some() && !faded {
            // The highlighted request's cells get a dark frame, whatever their colour.
            canvas.outline(x, y, w, h, palette::INK);
        }
    }
}

/// One pixel a cell, row-major over the whole width (pitch 1): cell `i` is pixel `i`, in the
/// colour [`draw_cells`] gives a one-pixel cell (a highlighted one is all frame).
fn draw_pixels(canvas: &mut Pixels<'_>, cells: &[MapCell], cell_tokens: u32, opts: &RenderOptions) {
    let theme = canvas.theme;
    for (c, px) in cells.iter().zip(canvas.buf.chunks_exact_mut(4)) {
        let colour = match opts.highlight_owner {
            Some(owner) if c.owner == owner => palette::INK,
            highlight => fade_to(cell_colour_in(c, cell_tokens, &theme), highlight.is_some(), &theme),
        };
        px.copy_from_slice(&colour);
    }
}

struct Pixels<'a> {
    buf: &'a mut Vec<u8>,
    stride: usize,
    height: usize,
    theme: MapTheme,
}

impl Pixels<'_> {
    fn fill(&mut self, x: u32, y: u32, w: u32, h: u32, c: Rgba) {
        let (x, y) = (x as usize, y as usize);
        let x_end = (x + w as usize).min(self.stride);
        let y_end = (y + h as usize).min(self.height);
        for row in y..y_end {
            let start = (row * self.stride + x) * 4;
            let end = (row * self.stride + x_end) * 4;
            if start >= end {
                continue;
            }
            for px in self.buf[start..end].chunks_exact_mut(4) {
                px.copy_from_slice(&c);
            }
        }
    }

    fn put(&mut self, x: u32, y: u32, c: Rgba) {
        let (x, y) = (x as usize, y as usize);
        if x < self.stride && y < self.height {
            let o = (y * self.stride + x) * 4;
            self.buf[o..o + 4].copy_from_slice(&c);
        }
    }

    /// The keyboard cursor on the cell at `(x, y, w, h)`: a ring two pixels wide in the
    /// theme's focus colour with a white line inside it, so it cannot be taken for the one-pixel
    /// ink frame of a highlighted request.
    fn cursor(&mut self, (x, y, w, h): (u32, u32, u32, u32)) {
        let c = self.theme.cursor;
        self.outline(x, y, w, h, c);
        if w.min(h) >= 5 {
            self.outline(x + 1, y + 1, w - 2, h - 2, c);
        }
        if w.min(h) >= 7 {
            self.outline(x + 2, y + 2, w - 4, h - 4, palette::PAPER);
        }
    }

    fn outline(&mut self, x: u32, y: u32, w: u32, h: u32, c: Rgba) {
        if w.min(h) < 3 {
            self.fill(x, y, w, h, c);
            return;
        }
        self.fill(x, y, w, 1, c);
        self.fill(x, y + h - 1, w, 1, c);
        self.fill(x, y, 1, h, c);
        self.fill(x + w - 1, y, 1, h, c);
    }
}

fn fade_to(c: Rgba, faded: bool, theme: &MapTheme) -> Rgba {
    if faded {
        mix_w(c, theme.background, FADE_W)
    } else {
        c
    }
}

/// Draws one cell into its rectangle `(x, y, w, h)`.
fn draw_cell(px: &mut Pixels<'_>, (x, y, w, h): (u32, u32, u32, u32), c: &MapCell, cell_tokens: u32, faded: bool) {
    let theme = px.theme;
    let fade = |c: Rgba, f: bool| fade_to(c, f, &theme);
    let s = w.min(h);
    if s < 3 {
        px.fill(x, y, w, h, fade(cell_colour_in(c, cell_tokens, &theme), faded));
        return;
    }
    // A square dot of `size` pixels in the middle of the cell.
    let dot = |px: &mut Pixels<'_>, colour: Rgba, size: u32| {
        let d = size.min(s);
        px.fill(x + (w - d) / 2, y + (h - d) / 2, d, d, fade(colour, faded));
    };
    let Some(request) = c.request() else {
        px.fill(x, y, w, h, fade(theme.free, faded));
        if c.flags & MapCell::CACHED != 0 {
            dot(px, palette::CACHED, (s / 3).max(1));
        }
        if c.flags & MapCell::BEHIND_WINDOW != 0 {
            dot(px, palette::BEHIND_WINDOW, (s / 3).max(1));
        }
        return;
    };
    let filled = filled_rows(c.live_tokens, cell_tokens, h);
    let empty_rows = h - filled;
    if empty_rows > 0 {
        px.fill(x, y, w, empty_rows, fade(theme.empty, faded));
        if s >= HATCH_FROM {
            let hatch = fade(theme.empty_hatch, faded);
            for dy in 0..empty_rows {
                for dx in 0..w {
                    // Global coordinates keep the hatch continuous across cells.
                    if (x + dx + y + dy) % 4 == 0 {
                        px.put(x + dx, y + dy, hatch);
                    }
                }
            }
        }
    }
    if filled > 0 {
        px.fill(x, y + empty_rows, w, filled, fade(group_shade(owner_colour(request), c.group), faded));
    }
    if c.flags & MapCell::SLAB_START != 0 {
        let bar = if w >= 5 { (w / 4).max(2) } else { 1 };
        px.fill(x, y, bar, h, fade(palette::INK, faded));
    }
    if s >= 5 {
        if c.flags & MapCell::SHARED != 0 {
            dot(px, palette::INK, (s / 3).max(1));
        }
        if c.flags & MapCell::COPIED != 0 {
            dot(px, palette::PAPER, (s / 3).max(1));
        }
        if cfg!(feature = "kv-offload") && c.flags & MapCell::LOADING != 0 {
            // A bar across the middle: the chunk is being read to the GPU.
            let t = (h / 4).max(1);
            px.fill(x + 1, y + (h - t) / 2, w - 2, t, fade(palette::INK, faded));
        }
    }
}

/// At most `buckets` samples for the chart: consecutive samples are merged into one per bucket
/// of simulated time (the largest allocated/live/queue values, the last time and preemption
/// count), so peaks survive.
pub fn downsample(series: &[StepPoint], duration_us: u64, buckets: usize) -> Vec<StepPoint> {
    if series.len() <= buckets.max(1) {
        return series.to_vec();
    }
    let buckets = buckets.max(1) as u64;
    let span = duration_us.max(1);
    let mut out: Vec<StepPoint> = Vec::with_capacity(buckets as usize);
    let mut current: Option<(u64, StepPoint)> = None;
    for s in series {
        let b = (s.t_us.min(span - 1) * buckets / span).min(buckets - 1);
        match &mut current {
            Some((cb, acc)) if *cb == b => acc.absorb(s),
            _ => {
                if let Some((_, acc)) = current.take() {
                    out.push(acc);
                }
                current = Some((b, *s));
            }
        }
    }
    if let Some((_, acc)) = current {
        out.push(acc);
    }
    out
}

/// The series as CSV, one row per step and run, labelled by allocator.
pub fn series_csv(runs: &[(&str, &[StepPoint])]) -> String {
    let mut out = String::from("allocator,t_s,allocated_tokens,live_tokens,running,waiting,swapped,preemptions\n");
    for (label, series) in runs {
        for s in *series {
            out.push_str(&format!(
                "{label},{:.6},{},{},{},{},{},{}\n",
                s.t_us as f64 / 1e6,
                s.allocated_tokens,
                s.live_tokens,
                s.running,
                s.waiting,
                s.swapped,
                s.preemptions
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(owner: u32, live: u16, flags: u8) -> MapCell {
        MapCell { owner, live_tokens: live, flags, group: 0 }
    }

    fn pixel(buf: &[u8], layout: &MapLayout, x: u32, y: u32) -> Rgba {
        let o = ((y * layout.width + x) * 4) as usize;
        [buf[o], buf[o + 1], buf[o + 2], buf[o + 3]]
    }

    #[test]
    fn cells_draw_free_empty_live_and_markers() {
        let cells =
            [cell(0, 0, 0), cell(1, 0, MapCell::SLAB | MapCell::SLAB_START), cell(1, 16, MapCell::SLAB), cell(2, 8, 0)];
        let l = MapLayout::with_pitch(cells.len(), 40, 10);
        let mut buf = Vec::new();
        render_map(&cells, 16, &l, &RenderOptions::default(), &mut buf);
        assert_eq!(buf.len(), (40 * 10 * 4) as usize);
        // free
        assert_eq!(pixel(&buf, &l, 4, 4), palette::FREE);
        // gap column
        assert_eq!(pixel(&buf, &l, 9, 4), palette::BACKGROUND);
        // slab start: marker on the left, empty (dark red) elsewhere
        assert_eq!(pixel(&buf, &l, 10, 5), palette::INK);
        assert_eq!(pixel(&buf, &l, 15, 2), palette::EMPTY);
        assert_eq!(pixel(&buf, &l, 15, 1), palette::EMPTY_HATCH);
        // full cell: owner colour everywhere
        assert_eq!(pixel(&buf, &l, 21, 0), owner_colour(0));
        assert_eq!(pixel(&buf, &l, 28, 8), owner_colour(0));
        // half-full: top half empty, bottom half the owner's colour
        assert_eq!(pixel(&buf, &l, 31, 2), palette::EMPTY);
        assert_eq!(pixel(&buf, &l, 31, 8), owner_colour(1));
    }

    #[test]
    fn a_host_chunk_being_loaded_has_a_bar_across_its_middle() {
        let cells = [cell(3, 16, 0), cell(3, 16, MapCell::LOADING)];
        let l = MapLayout::with_pitch(cells.len(), 20, 10);
        let mut buf = Vec::new();
        render_map(&cells, 16, &l, &RenderOptions::default(), &mut buf);
        // Both full in the owner's colour; the loading one has an ink bar at mid-height.
        assert_eq!(pixel(&buf, &l, 4, 4), owner_colour(2));
        assert_eq!(pixel(&buf, &l, 14, 4), palette::INK);
        assert_eq!(pixel(&buf, &l, 14, 1), owner_colour(2));
    }

    /// One-pixel cells are drawn pixel by pixel: the same pixels as drawing each cell in its
    /// rectangle, free, cached, empty, partly and fully live, shared and copied, highlighted
    /// or faded, light and dark.
    #[test]
    fn one_pixel_cells_draw_as_cell_rectangles_do() {
        let flags = [0, MapCell::CACHED, MapCell::SHARED, MapCell::COPIED, MapCell::SLAB | MapCell::SLAB_START];
        let cells: Vec<MapCell> = (0..997u32)
            .map(|i| {
                let owner = if i % 7 == 0 { 0 } else { 1 + i % 23 };
                cell(owner, (i * 5 % 17) as u16, flags[(i % 5) as usize])
            })
            .collect();
        let layout = MapLayout::fit(cells.len(), 40, 10);
        assert_eq!((layout.pitch, layout.cols, layout.width, layout.rows, layout.height), (1, 40, 40, 25, 25));
        for opts in [
            RenderOptions::default(),
            RenderOptions { highlight_owner: Some(5), cursor: Some(41), dark: false },
            RenderOptions { highlight_owner: Some(9), cursor: None, dark: true },
        ] {
            let mut fast = Vec::new();
            render_map(&cells, 16, &layout, &opts, &mut fast);
            let theme = MapTheme::of(opts.dark);
            let mut slow = vec![0u8; fast.len()];
            for px in slow.chunks_exact_mut(4) {
                px.copy_from_slice(&theme.background);
            }
            let mut canvas = Pixels { buf: &mut slow, stride: 40, height: 25, theme };
            draw_cells(&mut canvas, &cells, 16, &layout, &opts);
            if let Some(i) = opts.cursor {
                canvas.cursor(layout.rect(i));
            }
            assert!(fast == slow, "one-pixel cells differ from cell rectangles under {opts:?}");
        }
    }

    #[test]
    fn highlight_fades_other_owners_and_cursor_outlines() {
        let cells = [cell(1, 16, 0), cell(2, 16, 0)];
        let l = MapLayout::with_pitch(2, 20, 10);
        let mut buf = Vec::new();
        let opts = RenderOptions { highlight_owner: Some(2), cursor: Some(1), dark: false };
        render_map(&cells, 16, &l, &opts, &mut buf);
        assert_eq!(pixel(&buf, &l, 4, 4), mix_w(owner_colour(0), palette::BACKGROUND, FADE_W));
        assert_eq!(pixel(&buf, &l, 18, 4), palette::FOCUS, "the cursor rings the highlighted cell");
        assert_eq!(mix(palette::EMPTY, palette::FREE, 0.0), palette::EMPTY);
        assert_eq!(mix(palette::EMPTY, palette::FREE, 1.0), palette::FREE);
        assert_eq!(pixel(&buf, &l, 14, 4), owner_colour(1));
        assert_eq!(pixel(&buf, &l, 10, 0), palette::FOCUS);
        let no_cursor = RenderOptions { cursor: None, ..opts };
        render_map(&cells, 16, &l, &no_cursor, &mut buf);
        assert_eq!(pixel(&buf, &l, 18, 4), palette::INK, "the highlighted cell is framed");
        assert_eq!(pixel(&buf, &l, 0, 0), mix_w(owner_colour(0), palette::BACKGROUND, FADE_W), "no frame when faded");
    }

    #[test]
    fn small_cells_blend_instead_of_filling() {
        let cells = [cell(0, 0, 0), cell(3, 0, 0), cell(3, 16, 0)];
        let l = MapLayout::with_pitch(3, 6, 2);
        let mut buf = Vec::new();
        render_map(&cells, 16, &l, &RenderOptions::default(), &mut buf);
        assert_eq!(pixel(&buf, &l, 0, 0), palette::FREE);
        assert_eq!(pixel(&buf, &l, 2, 1), palette::EMPTY);
        assert_eq!(pixel(&buf, &l, 5, 1), owner_colour(2));
    }

    /// The hue of a colour in degrees (0 to 360; 0 for greys).
    fn hue(c: Rgba) -> f64 {
        let (r, g, b) = (f64::from(c[0]), f64::from(c[1]), f64::from(c[2]));
        let (max, min) = (r.max(g).max(b), r.min(g).min(b));
        if max == min {
            return 0.0;
        }
        let d = max - min;
        let h = if max == r {
            ((g - b) / d).rem_euclid(6.0)
        } else if max == g {
            (b - r) / d + 2.0
        } else {
            (r - g) / d + 4.0
        };
        h * 60.0
    }

    #[test]
    fn no_request_colour_reads_as_a_waste_red_and_the_cursor_is_its_own() {
        for i in 0..16 {
            let c = owner_colour(i);
            // Reds and pinks sit within 30 degrees of red; every waste colour does.
            let h = hue(c);
            assert!((30.0..=330.0).contains(&h), "request {i}'s colour {c:?} has a red hue ({h:.0}°)");
        }
        for waste in [palette::EMPTY, palette::EMPTY_HATCH, MapTheme::DARK.empty] {
            let h = hue(waste);
            assert!(!(30.0..=330.0).contains(&h), "{waste:?} is a red");
        }
        // The cursor: two focus-coloured rings and a white one inside, on a 10-px cell.
        let cells = [cell(1, 16, 0), cell(2, 16, 0)];
        let l = MapLayout::with_pitch(2, 22, 11);
        let mut buf = Vec::new();
        render_map(&cells, 16, &l, &RenderOptions { highlight_owner: Some(2), cursor: Some(1), dark: false }, &mut buf);
        let (x, y, _, _) = l.rect(1);
        assert_eq!(pixel(&buf, &l, x, y + 4), palette::FOCUS);
        assert_eq!(pixel(&buf, &l, x + 1, y + 4), palette::FOCUS);
        assert_eq!(pixel(&buf, &l, x + 2, y + 4), palette::PAPER);
        assert_ne!(palette::FOCUS, palette::INK, "the cursor is not the highlight's frame");
    }

    /// WCAG contrast ratio of two colours.
    fn contrast(a: Rgba, b: Rgba) -> f64 {
        let lum = |c: Rgba| {
            let ch = |v: u8| {
                let v = f64::from(v) / 255.0;
                if v <= 0.03928 {
                    v / 12.92
                } else {
                    ((v + 0.055) / 1.055).powf(2.4)
                }
            };
            0.2126 * ch(c[0]) + 0.7152 * ch(c[1]) + 0.0722 * ch(c[2])
        };
        let (x, y) = (lum(a), lum(b));
        (x.max(y) + 0.05) / (x.min(y) + 0.05)
    }

    #[test]
    fn the_empty_hatch_shows_in_small_cells_at_one_device_pixel() {
        for theme in [MapTheme::LIGHT, MapTheme::DARK] {
            assert!(contrast(theme.empty, theme.empty_hatch) >= 2.0, "{theme:?}");
        }
        // A 5-px cell (pitch 6 at 1×) carries hatch pixels.
        let l = MapLayout::with_pitch(1, 6, 6);
        let mut buf = Vec::new();
        render_map(&[cell(1, 0, MapCell::SLAB)], 16, &l, &RenderOptions::default(), &mut buf);
        let hatch = (0..5)
            .flat_map(|y| (1..5).map(move |x| (x, y)))
            .filter(|&(x, y)| pixel(&buf, &l, x, y) == palette::EMPTY_HATCH);
        assert!(hatch.count() >= 3);
    }

    #[test]
    fn filled_rows_never_hide_a_live_token_or_fake_a_full_cell() {
        assert_eq!(filled_rows(0, 16, 8), 0);
        assert_eq!(filled_rows(1, 16, 8), 1);
        assert_eq!(filled_rows(15, 16, 8), 7);
        assert_eq!(filled_rows(16, 16, 8), 8);
    }

    #[test]
    fn hybrid_groups_shade_their_owner_and_blocks_behind_the_window_are_marked() {
        let mut g1 = cell(3, 16, 0);
        g1.group = 1;
        let g0 = cell(3, 16, 0);
        assert_ne!(cell_colour(&g0, 16), cell_colour(&g1, 16), "a later group is a shade of its own");
        assert_eq!(cell_colour(&g0, 16), owner_colour(2), "group 0 keeps the owner's colour");
        let behind = cell(0, 0, MapCell::BEHIND_WINDOW);
        assert_ne!(cell_colour(&behind, 16), cell_colour(&cell(0, 0, 0), 16));
        // Drawn large, the freed block carries a dot in the window's colour.
        let l = MapLayout::with_pitch(1, 10, 10);
        let mut buf = Vec::new();
        render_map(&[behind], 16, &l, &RenderOptions::default(), &mut buf);
        assert_eq!(pixel(&buf, &l, 4, 4), palette::BEHIND_WINDOW);
        assert_eq!(pixel(&buf, &l, 0, 0), palette::FREE);
    }

    #[test]
    fn owner_colours_are_stable_and_differ_for_neighbours() {
        assert_eq!(owner_colour(5), owner_colour(5));
        for r in 0..64 {
            assert_ne!(owner_colour(r), owner_colour(r + 1));
            assert_ne!(owner_colour(r), palette::EMPTY);
        }
    }

    #[test]
    fn downsample_keeps_peaks_and_the_last_time() {
        let series: Vec<StepPoint> = (0..100)
            .map(|i| StepPoint {
                t_us: (i + 1) * 10,
                allocated_tokens: if i == 42 { 999 } else { 10 },
                live_tokens: 5,
                running: 1,
                waiting: 0,
                swapped: 0,
                preemptions: i as u32,
            })
            .collect();
        let d = downsample(&series, 1000, 10);
        assert_eq!(d.len(), 10);
        assert!(d.iter().any(|s| s.allocated_tokens == 999));
        assert_eq!(d.last().map(|s| (s.t_us, s.preemptions)), Some((1000, 99)));
        assert_eq!(downsample(&series[..5], 1000, 10).len(), 5);
    }

    #[test]
    fn csv_has_a_header_and_one_row_per_sample() {
        let s = [StepPoint { t_us: 1_500_000, allocated_tokens: 3, live_tokens: 2, ..StepPoint::default() }];
        let csv = series_csv(&[("paged", &s)]);
        assert_eq!(
            csv,
            "allocator,t_s,allocated_tokens,live_tokens,running,waiting,swapped,preemptions\npaged,1.500000,3,2,0,0,0,0\n"
        );
    }

    #[test]
    fn the_dark_theme_keeps_the_meanings() {
        let cells = [
            MapCell { owner: 1, live_tokens: 0, flags: MapCell::SLAB, group: 0 },
            MapCell::default(),
            MapCell { owner: 2, live_tokens: 16, flags: 0, group: 0 },
        ];
        let l = MapLayout::with_pitch(3, 30, 10);
        let mut buf = Vec::new();
        render_map(&cells, 16, &l, &RenderOptions { dark: true, ..RenderOptions::default() }, &mut buf);
        let dark = MapTheme::DARK;
        assert_eq!(pixel(&buf, &l, 9, 9), dark.background, "the gap is the dark background");
        assert_eq!(pixel(&buf, &l, 14, 4), dark.free);
        assert_eq!(pixel(&buf, &l, 2, 1), dark.empty);
        assert_eq!(pixel(&buf, &l, 24, 4), owner_colour(1), "request colours do not change");
        let luma = |c: Rgba| 0.2126 * f64::from(c[0]) + 0.7152 * f64::from(c[1]) + 0.0722 * f64::from(c[2]);
        // Empty stays red (red channel dominant), stands off the background and free cells, and is
        // darker than every request colour.
        assert!(dark.empty[0] > 2 * dark.empty[1] && dark.empty[0] > 2 * dark.empty[2]);
        assert!(luma(dark.empty) > luma(dark.background) + 15.0);
        for r in 0..16 {
            assert!(luma(owner_colour(r)) > luma(dark.empty) + 25.0, "request {r}");
            assert!(luma(owner_colour(r)) > luma(dark.free) + 25.0, "request {r}");
        }
    }
}
