//! From timed gathers to the step-time model's constants: medians of paged/contiguous ratios per
//! block size (the paged overhead), a least-squares line of contiguous read time against bytes
//! (slope → effective bandwidth, intercept → fixed cost per read), and the per-batch-size table.

use serde::Serialize;

/// One measured step: the same batch read `reps` times through block tables and contiguously.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    pub block_size: u32,
    pub step: u64,
    pub t_s: f64,
    pub seqs: u32,
    pub tokens: u64,
    pub bytes: u64,
    pub paged_runs: u64,
    pub contiguous_runs: u64,
    /// The checksum both reads produced and the reference expected.
    pub checksum: Option<u64>,
    pub paged_us: Vec<f64>,
    pub contiguous_us: Vec<f64>,
}

impl Sample {
    pub fn paged_median_us(&self) -> f64 {
        median(&self.paged_us)
    }
    pub fn contiguous_median_us(&self) -> f64 {
        median(&self.contiguous_us)
    }
    /// Paged / contiguous time of each repetition (the two reads of a pair ran back to back).
    pub fn ratios(&self) -> impl Iterator<Item = f64> + '_ {
        self.paged_us.iter().zip(&self.contiguous_us).filter(|(_, &c)| c > 0.0).map(|(&p, &c)| p / c)
    }
}

pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Least-squares line y = intercept + slope × x.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Line {
    pub intercept: f64,
    pub slope: f64,
    pub r2: f64,
    pub points: usize,
}

pub fn fit_line(points: &[(f64, f64)]) -> Option<Line> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = if syy > 0.0 { (sxy * sxy) / (sxx * syy) } else { 1.0 };
    Some(Line { intercept: my - slope * mx, slope, r2, points: points.len() })
}

/// Theil–Sen line: the median of pairwise slopes, and the median intercept under it. Robust to
/// the outliers a shared machine produces (a neighbour's burst lands on a few samples only).
/// When that intercept is negative, the line is refitted through the origin (intercept 0).
pub fn fit_line_robust(points: &[(f64, f64)]) -> Option<Line> {
    let mut slopes = Vec::with_capacity(points.len() * points.len().saturating_sub(1) / 2);
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            if (b.0 - a.0).abs() > f64::EPSILON * a.0.abs().max(1.0) {
                slopes.push((b.1 - a.1) / (b.0 - a.0));
            }
        }
    }
    if slopes.is_empty() {
        return None;
    }
    let mut slope = median(&slopes);
    let mut intercept = median(&points.iter().map(|p| p.1 - slope * p.0).collect::<Vec<_>>());
    if intercept < 0.0 {
        // A fixed cost cannot be negative (small reads that hit in cache bend the line): fit
        // through the origin instead, with the median time per byte.
        let per_byte: Vec<f64> = points.iter().filter(|p| p.0 > 0.0).map(|p| p.1 / p.0).collect();
        if !per_byte.is_empty() {
            slope = median(&per_byte);
            intercept = 0.0;
        }
    }
    let my = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
    let ss_res: f64 = points.iter().map(|p| (p.1 - intercept - slope * p.0).powi(2)).sum();
    let ss_tot: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    let r2 = if ss_tot > 0.0 { 1.0 - ss_res / ss_tot } else { 1.0 };
    Some(Line { intercept, slope, r2, points: points.len() })
}

/// Per block size: what paged reads cost relative to contiguous reads of the same bytes.
#[derive(Clone, Debug, Serialize)]
pub struct BlockSizeFigures {
    pub block_size: u32,
    pub samples: usize,
    /// Median over every (sample, repetition) of paged time / contiguous time, minus one.
    pub overhead_median: f64,
    /// Σ paged time / Σ contiguous time − 1 (sample medians).
    pub overhead_of_sums: f64,
    pub paged_gb_s: f64,
    pub contiguous_gb_s: f64,
    /// Mean bytes per contiguous run of a paged read.
    pub paged_run_bytes: f64,
}

pub fn block_size_figures(block_size: u32, samples: &[&Sample]) -> BlockSizeFigures {
    let ratios: Vec<f64> = samples.iter().flat_map(|s| s.ratios()).collect();
    let bytes: u64 = samples.iter().map(|s| s.bytes).sum();
    let paged_us: f64 = samples.iter().map(|s| s.paged_median_us()).sum();
    let contiguous_us: f64 = samples.iter().map(|s| s.contiguous_median_us()).sum();
    let runs: u64 = samples.iter().map(|s| s.paged_runs).sum();
    BlockSizeFigures {
        block_size,
        samples: samples.len(),
        overhead_median: median(&ratios) - 1.0,
        overhead_of_sums: paged_us / contiguous_us - 1.0,
        paged_gb_s: gb_s(bytes, paged_us),
        contiguous_gb_s: gb_s(bytes, contiguous_us),
        paged_run_bytes: if runs > 0 { bytes as f64 / runs as f64 } else { 0.0 },
    }
}

/// Effective bandwidth for contiguous vs paged reads, by running-batch size.
#[derive(Clone, Debug, Serialize)]
pub struct BatchFigures {
    pub block_size: u32,
    /// Sequences in the batch: from `seqs_min` to `seqs_max` inclusive.
    pub seqs_min: u32,
    pub seqs_max: u32,
    pub samples: usize,
    pub mean_bytes: f64,
    pub paged_gb_s: f64,
    pub contiguous_gb_s: f64,
}

/// Buckets of batch size by powers of two: 1, 2–3, 4–7, …
pub fn batch_figures(samples: &[Sample]) -> Vec<BatchFigures> {
    let mut keys: Vec<(u32, u32)> = samples.iter().map(|s| (s.block_size, bucket(s.seqs))).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|(bs, lo)| {
            let group: Vec<&Sample> = samples.iter().filter(|s| s.block_size == bs && bucket(s.seqs) == lo).collect();
            let bytes: u64 = group.iter().map(|s| s.bytes).sum();
            BatchFigures {
                block_size: bs,
                seqs_min: lo,
                seqs_max: lo * 2 - 1,
                samples: group.len(),
                mean_bytes: bytes as f64 / group.len() as f64,
                paged_gb_s: gb_s(bytes, group.iter().map(|s| s.paged_median_us()).sum()),
                contiguous_gb_s: gb_s(bytes, group.iter().map(|s| s.contiguous_median_us()).sum()),
            }
        })
        .collect()
}

fn bucket(seqs: u32) -> u32 {
    1 << (31 - seqs.max(1).leading_zeros())
}

pub fn gb_s(bytes: u64, us: f64) -> f64 {
    if us > 0.0 {
        bytes as f64 / us / 1e3
    } else {
        0.0
    }
}

/// Rounds for the file (keeps it readable and diff-friendly).
pub fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}
