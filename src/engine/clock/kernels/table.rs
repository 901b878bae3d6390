//! One measured kernel table: times on a grid of up to five axes (sizes, head counts), read
//! anywhere with log–log multilinear interpolation. Kernel time is close to a power law of its
//! size between grid points; below an axis's first point the time is held (a kernel never gets
//! faster than its smallest measured size), above its last it grows in proportion (a kernel that
//! large is bound by its bytes or its FLOPs, which grow with it).

/// Kernel times (µs) on a grid, first axis slowest.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    axes: Vec<Vec<f64>>,
    /// Per axis, the log of each step between its points (`ln(b / a)`), which every read
    /// between those points divides by.
    ln_steps: Vec<Vec<f64>>,
    ln_us: Vec<f64>,
}

/// Where a coordinate falls on an axis: the lower point's index, the log-space weight of the
/// upper point (0 below the axis, 1 at or above its end), and the factor beyond the last point.
pub type Spot = (usize, f64, f64);

/// Why a table cannot be read.
#[derive(Clone, Debug, PartialEq)]
pub struct TableError(pub String);

impl Table {
    /// A table over `axes` (each strictly ascending, positive) holding one positive time per
    /// grid point.
    pub fn new(axes: Vec<Vec<f64>>, us: &[f64]) -> Result<Table, TableError> {
        if axes.is_empty() || axes.len() > 5 {
            return Err(TableError(format!("a table has 1 to 5 axes, not {}", axes.len())));
        }
        for (i, a) in axes.iter().enumerate() {
            if a.is_empty() || a.iter().any(|&x| !(x.is_finite() && x > 0.0)) || a.windows(2).any(|w| w[0] >= w[1]) {
                return Err(TableError(format!("axis {i} must list positive points in ascending order")));
            }
        }
        let points: usize = axes.iter().map(Vec::len).product();
        if us.len() != points {
            return Err(TableError(format!("the grid has {points} points but {} times are given", us.len())));
        }
        if let Some(i) = us.iter().position(|&v| !(v.is_finite() && v > 0.0)) {
            return Err(TableError(format!("time {i} is {}; every time must be a positive number of µs", us[i])));
        }
        Ok(Table::from_ln(axes, us.iter().map(|&v| libm::log(v)).collect()))
    }

    fn from_ln(axes: Vec<Vec<f64>>, ln_us: Vec<f64>) -> Table {
        let ln_steps = axes.iter().map(|a| a.windows(2).map(|w| libm::log(w[1] / w[0])).collect()).collect();
        Table { axes, ln_steps, ln_us }
    }

    /// The axes' points.
    pub fn axis(&self, i: usize) -> &[f64] {
        &self.axes[i]
    }

    /// The table over its last axes with the first ones held at `leading`: what [`Table::at`]
    /// reads there, on the remaining grid, so that a clock whose model fixes the leading axes
    /// (head size, heads) interpolates over the rest only. Multilinear interpolation is
    /// separable, so it reads what the whole table reads, up to rounding.
    pub fn slice_leading(&self, leading: &[f64]) -> Table {
        let rest = &self.axes[leading.len()..];
        let points: usize = rest.iter().map(Vec::len).product();
        let mut at = leading.to_vec();
        at.resize(self.axes.len(), 0.0);
        let ln_us = (0..points)
            .map(|mut flat| {
                // The grid point's coordinates, last axis fastest (the order `ln_us` keeps).
                for (d, axis) in rest.iter().enumerate().rev() {
                    at[leading.len() + d] = axis[flat % axis.len()];
                    flat /= axis.len();
                }
                libm::log(self.at(&at))
            })
            .collect();
        Table::from_ln(rest.to_vec(), ln_us)
    }

    /// Where `x` falls on axis `d` (what [`Table::at_spots`] reads).
    pub fn locate(&self, d: usize, x: f64) -> Spot {
        locate(&self.axes[d], &self.ln_steps[d], x)
    }

    /// The time at `at` (one coordinate per axis), µs.
    pub fn at(&self, at: &[f64]) -> f64 {
        debug_assert_eq!(at.len(), self.axes.len());
        let mut spots = [(0usize, 0.0f64, 1.0f64); 5];
        for (d, &x) in at.iter().enumerate() {
            spots[d] = self.locate(d, x);
        }
        self.at_spots(&spots[..at.len()])
    }

    /// The time where each axis's coordinate falls (`spots`, one per axis, from
    /// [`Table::locate`]), µs: what [`Table::at`] reads, for a caller that keeps a spot.
    pub fn at_spots(&self, spots: &[Spot]) -> f64 {
        let dims = self.axes.len();
        debug_assert_eq!(spots.len(), dims);
        let mut ln = 0.0;
        for corner in 0..(1usize << dims) {
            let (mut index, mut weight) = (0usize, 1.0);
            for (d, (&(i, t, _), axis)) in spots.iter().zip(&self.axes).enumerate() {
                let n = axis.len();
                let upper = (corner >> (dims - 1 - d)) & 1 == 1;
                index = index * n + i + usize::from(upper && n > 1);
                weight *= if upper { t } else { 1.0 - t };
            }
            if weight > 0.0 {
                ln += weight * self.ln_us[index];
            }
        }
        libm::exp(ln) * spots.iter().map(|s| s.2).product::<f64>()
    }
}

/// Where `x` falls on an ascending axis (`ln_steps` its steps' logs): the lower index, the
/// log-space weight of the upper point (0 below the axis, 1 at or above its end), and the factor
/// beyond the last point (`x / last`).
fn locate(axis: &[f64], ln_steps: &[f64], x: f64) -> Spot {
    let n = axis.len();
    if n == 1 {
        return (0, 0.0, 1.0);
    }
    let (first, last) = (axis[0], axis[n - 1]);
    if x <= first {
        return (0, 0.0, 1.0);
    }
    if x >= last {
        return (n - 2, 1.0, x / last);
    }
    let i = axis.partition_point(|&g| g <= x) - 1;
    (i, libm::log(x / axis[i]) / ln_steps[i], 1.0)
}

/// A curve of one variable read from tables once (when a model is built), kept in log space so
/// a step reads it with one search and no allocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    ln_x: Vec<f64>,
    ln_y: Vec<f64>,
    /// Growth beyond the last point: y ∝ x^above.
    above: f64,
}

impl Curve {
    /// `ys` at each of `xs` (ascending, ≥ 1).
    pub fn new(xs: &[f64], ys: impl Fn(f64) -> f64, above: f64) -> Curve {
        let ln_x = xs.iter().map(|&x| libm::log(x)).collect();
        let ln_y = xs.iter().map(|&x| libm::log(ys(x).max(1e-6))).collect();
        Curve { ln_x, ln_y, above }
    }

    /// The curve at `x` (held below the first point).
    pub fn at(&self, x: f64) -> f64 {
        let n = self.ln_x.len();
        let lx = libm::log(x.max(1.0));
        if lx <= self.ln_x[0] {
            return libm::exp(self.ln_y[0]);
        }
        if lx >= self.ln_x[n - 1] {
            return libm::exp(self.ln_y[n - 1] + self.above * (lx - self.ln_x[n - 1]));
        }
        let i = self.ln_x.partition_point(|&g| g <= lx) - 1;
        let t = (lx - self.ln_x[i]) / (self.ln_x[i + 1] - self.ln_x[i]);
        libm::exp(self.ln_y[i] + t * (self.ln_y[i + 1] - self.ln_y[i]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_point_reads_its_value_and_between_points_a_power_law() {
        let t = Table::new(vec![vec![1.0, 4.0], vec![10.0, 1000.0]], &[1.0, 100.0, 16.0, 1600.0]).expect("valid");
        assert!((t.at(&[4.0, 10.0]) - 16.0).abs() < 1e-9);
        // y = x² · z: between the points the power law holds exactly.
        assert!((t.at(&[2.0, 100.0]) - 40.0).abs() < 1e-9);
        // Held below, proportional above.
        assert!((t.at(&[0.5, 10.0]) - 1.0).abs() < 1e-9);
        assert!((t.at(&[8.0, 10.0]) - 32.0).abs() < 1e-9);
        // Held at a first coordinate, the rest reads as the whole table, within and beyond the grid.
        let s = t.slice_leading(&[2.0]);
        for z in [5.0, 10.0, 300.0, 1000.0, 4000.0] {
            assert!((s.at(&[z]) - t.at(&[2.0, z])).abs() < 1e-9 * t.at(&[2.0, z]), "{z}");
        }
        let c = Curve::new(&[1.0, 4.0], |x| x * x, 1.0);
        assert!((c.at(2.0) - 4.0).abs() < 1e-9 && (c.at(0.5) - 1.0).abs() < 1e-9 && (c.at(8.0) - 32.0).abs() < 1e-9);
    }

    #[test]
    fn a_malformed_table_says_what_is_wrong() {
        assert!(Table::new(vec![vec![2.0, 1.0]], &[1.0, 1.0]).expect_err("refused").0.contains("ascending"));
        assert!(Table::new(vec![vec![1.0, 2.0]], &[1.0]).expect_err("refused").0.contains("2 points"));
        assert!(Table::new(vec![vec![1.0]], &[0.0]).expect_err("refused").0.contains("positive"));
    }
}
