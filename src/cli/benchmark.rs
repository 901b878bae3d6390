//! `kvlab run --benchmark`: the report as `vllm bench serve` prints its result, line for line
//! (labels padded to 40 columns, values to 10, floats to two decimals), so a simulated run and
//! a real benchmark can be read side by side. "Median" is the report's nearest-rank p50
//! (docs/REPORT.md says how it differs from numpy's median).

use crate::engine::Report;

/// The `============ Serving Benchmark Result ============` block of a report.
pub fn benchmark_block(r: &Report) -> String {
    let t = &r.throughput;
    let l = &r.latency_ms;
    let mut s = String::new();
    let title = |s: &mut String, text: &str, fill: char| *s += &format!("{}\n", centred(text, fill, 50));
    let int = |s: &mut String, label: &str, v: u64| *s += &format!("{:<40} {:<10}\n", label, v);
    let num = |s: &mut String, label: &str, v: f64| *s += &format!("{:<40} {:<10.2}\n", label, v);
    title(&mut s, " Serving Benchmark Result ", '=');
    int(&mut s, "Successful requests:", u64::from(r.requests.finished));
    num(&mut s, "Benchmark duration (s):", t.duration_s);
    int(&mut s, "Total input tokens:", t.input_tokens);
    int(&mut s, "Total generated tokens:", t.output_tokens);
    num(&mut s, "Request throughput (req/s):", t.requests_per_s);
    num(&mut s, "Output token throughput (tok/s):", t.output_tokens_per_s);
    num(&mut s, "Total Token throughput (tok/s):", t.total_tokens_per_s);
    for (heading, name, [mean, median, p99]) in [
        ("Time to First Token", "TTFT", [l.ttft_mean, l.ttft_p50, l.ttft_p99]),
        ("Time per Output Token (excl. 1st token)", "TPOT", [l.tpot_mean, l.tpot_p50, l.tpot_p99]),
        ("Inter-token Latency", "ITL", [l.itl_mean, l.itl_p50, l.itl_p99]),
    ] {
        title(&mut s, heading, '-');
        num(&mut s, &format!("Mean {name} (ms):"), mean);
        num(&mut s, &format!("Median {name} (ms):"), median);
        num(&mut s, &format!("P99 {name} (ms):"), p99);
    }
    s += &format!("{}\n", "=".repeat(50));
    s
}

/// `text` centred in `width` columns of `fill`, the extra column on the right (Python's
/// `"{:^50}"`).
fn centred(text: &str, fill: char, width: usize) -> String {
    let len = text.chars().count();
    let pad = width.saturating_sub(len);
    let left = pad / 2;
    format!("{}{text}{}", fill.to_string().repeat(left), fill.to_string().repeat(pad - left))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_centre_as_python_does() {
        assert_eq!(
            centred(" Serving Benchmark Result ", '=', 50),
            "============ Serving Benchmark Result ============"
        );
        assert_eq!(centred("Time to First Token", '-', 50), "---------------Time to First Token----------------");
        assert_eq!(
            centred("Time per Output Token (excl. 1st token)", '-', 50),
            "-----Time per Output Token (excl. 1st token)------"
        );
        assert_eq!(centred("Inter-token Latency", '-', 50), "---------------Inter-token Latency----------------");
    }
}
