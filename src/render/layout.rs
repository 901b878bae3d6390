//! Where each cell of the memory map goes: a row-major grid over a box of device pixels. The
//! full lab draws square cells ([`MapLayout::fit`], [`MapLayout::with_pitch`]); an embed fills
//! its whole box ([`MapLayout::fill`]): column and row edges are spread over the box's width
//! and height, so cells are as square as the grid allows but may be a pixel wider or taller
//! than their neighbours. Hit-testing follows the same edges.

/// Largest cell pitch (cell plus gap), in device pixels, of a square grid.
pub const MAX_PITCH: u32 = 28;

/// A grid of `cols` × `rows` cells over `width` × `height` pixels. Column `c` starts at
/// `c · width / cols` and row `r` at `r · height / rows` (whole pixels, rounded down); each
/// cell leaves a one-pixel gap on its right and bottom once `pitch` (the narrowest column or
/// row, in whole pixels) is 4 or more. `cell` is that narrowest cell's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapLayout {
    pub width: u32,
    pub height: u32,
    pub cols: u32,
    pub rows: u32,
    pub pitch: u32,
    pub cell: u32,
    pub cells: usize,
}

fn gap(pitch: u32) -> u32 {
    u32::from(pitch >= 4)
}

impl MapLayout {
    /// The largest square pitch at which `cells` cells fit `width` × `max_height` pixels; pitch 1
    /// (one pixel a cell, height growing past `max_height`) when nothing larger fits.
    pub fn fit(cells: usize, width: u32, max_height: u32) -> MapLayout {
        let width = width.max(1);
        let pitch = (1..=MAX_PITCH)
            .rev()
            .find(|&p| {
                let cols = width / p;
                cols > 0 && (cells as u64).div_ceil(u64::from(cols)) * u64::from(p) <= u64::from(max_height)
            })
            .unwrap_or(1);
        Self::with_pitch(cells, width, pitch)
    }

    /// A grid of square cells of fixed pitch over at most `width` pixels (the layout is as wide
    /// as its columns).
    pub fn with_pitch(cells: usize, width: u32, pitch: u32) -> MapLayout {
        let width = width.max(1);
        let pitch = pitch.clamp(1, width);
        let cols = (width / pitch).max(1);
        let rows = (cells as u64).div_ceil(u64::from(cols)).max(1) as u32;
        MapLayout { width: cols * pitch, height: rows * pitch, cols, rows, pitch, cell: pitch - gap(pitch), cells }
    }

    /// A grid that fills `width` × `height` pixels exactly, with the column count that makes
    /// cells closest to square. Falls back to [`MapLayout::fit`] (taller than the box) when the
    /// box has fewer pixels than there are cells.
    pub fn fill(cells: usize, width: u32, height: u32) -> MapLayout {
        let (w, h) = (width.max(1), height.max(1));
        if (cells as u64) > u64::from(w) * u64::from(h) || cells == 0 {
            return Self::fit(cells, w, h);
        }
        let rows_for = |cols: u32| (cells as u64).div_ceil(u64::from(cols)).max(1) as u32;
        // How far from square a cell is (1 = square), for `cols` columns.
        let skew = |cols: u32| {
            let (cw, ch) = (f64::from(w) / f64::from(cols), f64::from(h) / f64::from(rows_for(cols)));
            (cw / ch).max(ch / cw)
        };
        let guess = (cells as f64 * f64::from(w) / f64::from(h)).sqrt().round() as u32;
        let cols = (guess.saturating_sub(3).max(1)..=guess.saturating_add(3).min(w))
            .filter(|&c| rows_for(c) <= h)
            .min_by(|&a, &b| skew(a).total_cmp(&skew(b)))
            .unwrap_or_else(|| w.min(cells as u32).max(1));
        let rows = rows_for(cols);
        let pitch = (w / cols).min(h / rows).max(1);
        MapLayout { width: w, height: h, cols, rows, pitch, cell: pitch - gap(pitch), cells }
    }

    /// Left edge of column `c`.
    pub fn col_x(&self, c: u32) -> u32 {
        (u64::from(c) * u64::from(self.width) / u64::from(self.cols)) as u32
    }

    /// Top edge of row `r`.
    pub fn row_y(&self, r: u32) -> u32 {
        (u64::from(r) * u64::from(self.height) / u64::from(self.rows)) as u32
    }

    /// Top-left pixel of cell `i`.
    pub fn origin(&self, i: usize) -> (u32, u32) {
        let i = i as u32;
        (self.col_x(i % self.cols), self.row_y(i / self.cols))
    }

    /// Cell `i`'s drawn rectangle: (x, y, width, height), its gap left out.
    pub fn rect(&self, i: usize) -> (u32, u32, u32, u32) {
        let (c, r) = (i as u32 % self.cols, i as u32 / self.cols);
        let (x, y) = (self.col_x(c), self.row_y(r));
        let g = gap(self.pitch);
        (x, y, self.col_x(c + 1) - x - g, self.row_y(r + 1) - y - g)
    }

    /// The index among `n` edges (`edge(k)` rising with k) of the span holding `p`.
    fn span_at(p: u32, n: u32, edge: impl Fn(u32) -> u32, guess: u32) -> Option<u32> {
        let mut k = guess.min(n.saturating_sub(1));
        while k > 0 && edge(k) > p {
            k -= 1;
        }
        while k + 1 < n && edge(k + 1) <= p {
            k += 1;
        }
        (edge(k) <= p && p < edge(k + 1)).then_some(k)
    }

    /// The cell under pixel (x, y), gaps included.
    pub fn cell_at(&self, x: f64, y: f64) -> Option<usize> {
        if !(x >= 0.0 && y >= 0.0) || x >= f64::from(self.width) || y >= f64::from(self.height) {
            return None;
        }
        let (x, y) = (x as u32, y as u32);
        let guess_c = (u64::from(x) * u64::from(self.cols) / u64::from(self.width)) as u32;
        let guess_r = (u64::from(y) * u64::from(self.rows) / u64::from(self.height)) as u32;
        let col = Self::span_at(x, self.cols, |c| self.col_x(c), guess_c)?;
        let row = Self::span_at(y, self.rows, |r| self.row_y(r), guess_r)?;
        let i = (row * self.cols + col) as usize;
        (i < self.cells).then_some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_fits_the_largest_pitch() {
        let l = MapLayout::fit(5120, 900, 400);
        assert!(l.rows * l.pitch <= 400);
        assert!(l.cols * l.rows >= 5120);
        let bigger = MapLayout::with_pitch(5120, 900, l.pitch + 1);
        assert!(bigger.height > 400, "pitch {} was not the largest", l.pitch);
        let tiny = MapLayout::fit(200_000, 100, 10);
        assert_eq!(tiny.pitch, 1);
        assert_eq!(tiny.height, 2000);
    }

    #[test]
    fn hit_testing_maps_pixels_to_cells() {
        let l = MapLayout::with_pitch(10, 40, 10);
        assert_eq!((l.cols, l.rows), (4, 3));
        assert_eq!(l.cell_at(0.0, 0.0), Some(0));
        assert_eq!(l.cell_at(15.0, 5.0), Some(1));
        assert_eq!(l.cell_at(5.0, 25.0), Some(8));
        assert_eq!(l.cell_at(25.0, 25.0), None, "past the last cell");
        assert_eq!(l.cell_at(-1.0, 0.0), None);
    }

    #[test]
    fn a_filled_grid_covers_its_box_with_near_square_cells() {
        for (cells, w, h) in [(5120, 580, 190), (5120, 344, 262), (5120, 784, 230), (2, 300, 200), (97, 101, 7)] {
            let l = MapLayout::fill(cells, w, h);
            assert_eq!((l.width, l.height), (w, h));
            assert!(l.cols as usize * l.rows as usize >= cells, "{l:?}");
            assert!((l.rows - 1) as usize * (l.cols as usize) < cells, "a whole empty row: {l:?}");
            assert_eq!((l.col_x(l.cols), l.row_y(l.rows)), (w, h), "the edges reach the box's");
            // Every pixel of the box belongs to the cell whose rectangle (with its gap) holds it.
            for (x, y) in [(0, 0), (w - 1, 0), (w / 2, h / 2), (w - 1, h - 1), (w / 3, h - 1)] {
                if let Some(i) = l.cell_at(f64::from(x), f64::from(y)) {
                    let (cx, cy, cw, ch) = l.rect(i);
                    assert!(x >= cx && y >= cy && x <= cx + cw && y <= cy + ch, "{x},{y} in {i}: {l:?}");
                }
            }
        }
        let l = MapLayout::fill(5120, 580, 190);
        let (_, _, cw, ch) = l.rect(0);
        assert!(cw.abs_diff(ch) <= 1, "cells are near square: {cw}×{ch}");
        assert_eq!(MapLayout::fill(1_000_000, 100, 100), MapLayout::fit(1_000_000, 100, 100));
    }
}
