//! The CSV families, read by column name (resolved to positions once, from the header) with the
//! `csv` crate (quoted fields, CRLF, surrounding
//! spaces): Azure LLM inference (`TIMESTAMP,ContextTokens,GeneratedTokens`), BurstGPT 1–3,
//! Vidur (`arrived_at,…`), SplitwiseSim (`arrival_timestamp,…`) and BLIS TraceV2 (a YAML header,
//! then a CSV whose header has `input_tokens,output_tokens,arrival_time_us`); and kvlab's own
//! `arrival_s,prompt_tokens,output_tokens[,n]`, read line by line as it always was.

use csv::{ReaderBuilder, StringRecord, Trim};

use super::options::{ordinal_key, text_key};
use super::rows::{at, time_number, tokens, Parsed, RawRow};
use super::time::parse_datetime_us;

/// kvlab's CSV: `arrival_s,prompt_tokens,output_tokens[,n]`, a header line and `#` comments
/// skipped, arrivals taken as written (their zero is the file's).
pub(crate) fn read_kvlab(text: &str) -> Result<Parsed, String> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        if i == 0 && cols.first().is_some_and(|c| c.parse::<f64>().is_err()) {
            continue; // header
        }
        let at = |what: &str| format!("line {}: {what}", i + 1);
        if cols.len() < 3 || cols.len() > 4 {
            return Err(at("expected arrival_s,prompt_tokens,output_tokens[,n]"));
        }
        let t: f64 = cols[0]
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| at(&format!("arrival_s must be a number of seconds ≥ 0, found \"{}\"", cols[0])))?;
        let int = |s: &str, name: &str, max: u32| -> Result<u32, String> {
            s.parse::<u32>()
                .ok()
                .filter(|v| (1..=max).contains(v))
                .ok_or_else(|| at(&format!("{name} must be a whole number from 1 to {max}, found \"{s}\"")))
        };
        let prompt = int(cols[1], "prompt_tokens", 1_000_000)?;
        let output = int(cols[2], "output_tokens", 1_000_000)?;
        let n = if cols.len() == 4 { int(cols[3], "n", 16)? } else { 1 };
        let session = ordinal_key(rows.len() as u64);
        rows.push(RawRow { t, prompt, output, n, hash_ids: None, session, failed: false });
    }
    Ok(Parsed { rows, origin: Some(0.0), hash_block_tokens: 16 })
}

/// Calls `each(line, record, headers)` for every data row of a CSV whose header must hold
/// `required`; `first_line` is the header's line in the whole text (BLIS has lines before it).
fn each_record(
    text: &str,
    first_line: u64,
    format: &str,
    columns: Columns,
    mut each: impl FnMut(u64, &[&str; MAX_COLUMNS]) -> Result<(), String>,
) -> Result<(), String> {
    let mut reader = ReaderBuilder::new().trim(Trim::All).from_reader(text.as_bytes());
    // Lines counted from byte offsets (the csv crate's own line count skips blank lines).
    let (mut seen_byte, mut seen_line) = (0usize, first_line);
    let mut line_of = |pos: Option<&csv::Position>| {
        let mut byte = pos.map_or(seen_byte, |p| (p.byte() as usize).min(text.len()));
        // A record's position can be the start of the blank lines before it.
        while matches!(text.as_bytes().get(byte), Some(b'\n' | b'\r')) {
            byte += 1;
        }
        if byte >= seen_byte {
            seen_line += text.as_bytes()[seen_byte..byte].iter().filter(|&&b| b == b'\n').count() as u64;
            seen_byte = byte;
        }
        seen_line
    };
    let headers = reader.headers().map_err(|e| format!("line {first_line}: {e}"))?;
    let position = |name: &str| headers.iter().position(|h| h == name);
    let mut index = [None; MAX_COLUMNS];
    for (k, name) in columns.required.iter().enumerate() {
        index[k] = Some(position(name).ok_or_else(|| {
            let seen: Vec<&str> = headers.iter().collect();
            format!(
                "line {first_line}: the {format} format needs a column \"{name}\"; the header has {}",
                seen.join(", ")
            )
        })?);
    }
    for (k, name) in columns.optional.iter().enumerate() {
        index[columns.required.len() + k] = position(name);
    }
    // One record read into again and again: no allocation per row.
    let mut record = StringRecord::new();
    loop {
        let more = reader.read_record(&mut record).map_err(|e| match e.kind() {
            csv::ErrorKind::UnequalLengths { pos, expected_len, len } => format!(
                "line {}: expected {expected_len} columns as the header has, found {len}",
                line_of(pos.as_ref())
            ),
            _ => format!("line {}: {e}", line_of(e.position())),
        })?;
        if !more {
            break;
        }
        let line = line_of(record.position());
        let mut fields = [""; MAX_COLUMNS];
        for (field, i) in fields.iter_mut().zip(index) {
            *field = i.and_then(|i| record.get(i)).unwrap_or("");
        }
        each(line, &fields)?;
    }
    Ok(())
}

/// Most columns a reader names.
const MAX_COLUMNS: usize = 4;

/// The columns a reader takes by name, resolved to positions once from the header: the required
/// ones (a header without one is refused), then optional ones (an empty field when absent). The
/// reader's closure gets the fields in this order.
struct Columns {
    required: &'static [&'static str],
    optional: &'static [&'static str],
}

/// Azure LLM inference 2023/2024 and LMM 2025: datetimes to whole microseconds, made relative
/// to the earliest row before they become seconds (no float drift).
pub(crate) fn read_azure(text: &str) -> Result<Parsed, String> {
    let mut us = Vec::new();
    let mut rows = Vec::new();
    let columns = Columns { required: &["TIMESTAMP", "ContextTokens", "GeneratedTokens"], optional: &[] };
    each_record(text, 1, "azure", columns, |line, [timestamp, context, generated, _]| {
        us.push(parse_datetime_us(timestamp).map_err(|e| at(line, "TIMESTAMP", e))?);
        let prompt = tokens(line, "ContextTokens", context, 1)?;
        let output = tokens(line, "GeneratedTokens", generated, 1)?;
        let session = ordinal_key(rows.len() as u64);
        rows.push(RawRow { t: 0.0, prompt, output, n: 1, hash_ids: None, session, failed: false });
        Ok(())
    })?;
    let first = us.iter().copied().min().unwrap_or(0);
    for (row, t) in rows.iter_mut().zip(us) {
        row.t = (t - first) as f64 / 1e6;
    }
    Ok(Parsed { rows, origin: Some(0.0), hash_block_tokens: 16 })
}

/// BurstGPT 1, 2 and 3 (which inserts `Session ID,Elapsed time` after `Timestamp`), by column
/// name. A failure is a row with 0 response tokens or 0 request tokens: dropped and counted when
/// `drop_failed`, refused otherwise.
pub(crate) fn read_burstgpt(text: &str, drop_failed: bool) -> Result<Parsed, String> {
    let mut rows = Vec::new();
    let columns = Columns { required: &["Timestamp", "Request tokens", "Response tokens"], optional: &["Session ID"] };
    each_record(text, 1, "burstgpt", columns, |line, [timestamp, request, response, session]| {
        let t = time_number(line, "Timestamp", timestamp, "seconds")?;
        let prompt = tokens(line, "Request tokens", request, 0)?;
        let output = tokens(line, "Response tokens", response, 0)?;
        let failed = prompt == 0 || output == 0;
        if failed && !drop_failed {
            let column = if output == 0 { "Response tokens" } else { "Request tokens" };
            return Err(at(line, column, "a failed request (0 tokens); turn drop_failed on to drop failed rows"));
        }
        let session = if session.is_empty() { ordinal_key(rows.len() as u64) } else { text_key(session) };
        rows.push(RawRow { t, prompt, output, n: 1, hash_ids: None, session, failed });
        Ok(())
    })?;
    Ok(Parsed { rows, origin: None, hash_block_tokens: 16 })
}

/// Vidur's trace replay: `arrived_at` in seconds. Token counts of 0 are clipped to 1, as Vidur's
/// `TraceReplayRequestGenerator` clips them.
pub(crate) fn read_vidur(text: &str) -> Result<Parsed, String> {
    let mut rows = Vec::new();
    let columns = Columns { required: &["arrived_at", "num_prefill_tokens", "num_decode_tokens"], optional: &[] };
    each_record(text, 1, "vidur", columns, |line, [arrived_at, prefill, decode, _]| {
        let t = time_number(line, "arrived_at", arrived_at, "seconds")?;
        let prompt = tokens(line, "num_prefill_tokens", prefill, 0)?.max(1);
        let output = tokens(line, "num_decode_tokens", decode, 0)?.max(1);
        let session = ordinal_key(rows.len() as u64);
        rows.push(RawRow { t, prompt, output, n: 1, hash_ids: None, session, failed: false });
        Ok(())
    })?;
    Ok(Parsed { rows, origin: None, hash_block_tokens: 16 })
}

/// SplitwiseSim: `arrival_timestamp` in seconds, `prompt_size`, `token_size`.
pub(crate) fn read_splitwise(text: &str) -> Result<Parsed, String> {
    let mut rows = Vec::new();
    let columns = Columns { required: &["arrival_timestamp", "prompt_size", "token_size"], optional: &[] };
    each_record(text, 1, "splitwise", columns, |line, [arrival, prompt, output, _]| {
        let t = time_number(line, "arrival_timestamp", arrival, "seconds")?;
        let prompt = tokens(line, "prompt_size", prompt, 1)?;
        let output = tokens(line, "token_size", output, 1)?;
        let session = ordinal_key(rows.len() as u64);
        rows.push(RawRow { t, prompt, output, n: 1, hash_ids: None, session, failed: false });
        Ok(())
    })?;
    Ok(Parsed { rows, origin: None, hash_block_tokens: 16 })
}

/// The columns that make a line BLIS's CSV header.
pub(crate) const BLIS_COLUMNS: [&str; 3] = ["input_tokens", "output_tokens", "arrival_time_us"];

/// The byte offset and 0-based line index of BLIS's CSV header: the first line whose
/// comma-separated names include every one of `BLIS_COLUMNS`.
pub(crate) fn blis_header(text: &str) -> Option<(usize, usize)> {
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let names: Vec<&str> = line.trim().split(',').map(|c| c.trim().trim_matches('"')).collect();
        if BLIS_COLUMNS.iter().all(|c| names.contains(c)) {
            return Some((offset, i));
        }
        offset += line.len();
    }
    None
}

/// BLIS / inference-sim TraceV2: the YAML header (up to the CSV header line) is skipped, except
/// that a `time_unit` other than microseconds is refused; `arrival_time_us` in µs.
pub(crate) fn read_blis(text: &str) -> Result<Parsed, String> {
    let Some((offset, index)) = blis_header(text) else {
        return Err(format!(
            "the blis format needs a CSV header line with the columns {} after its YAML header; none was found",
            BLIS_COLUMNS.join(", ")
        ));
    };
    for (i, line) in text[..offset].lines().enumerate() {
        if let Some(unit) = line.trim().strip_prefix("time_unit:") {
            let unit = unit.trim().trim_matches(|c| c == '"' || c == '\'');
            if unit != "microseconds" && unit != "us" {
                return Err(at(i as u64 + 1, "time_unit", format!("expected microseconds, found \"{unit}\"")));
            }
        }
    }
    let mut rows = Vec::new();
    let mut times = Vec::new();
    let columns = Columns { required: &BLIS_COLUMNS, optional: &["session_id"] };
    each_record(&text[offset..], index as u64 + 1, "blis", columns, |line, [input, output, arrival_us, session]| {
        let us = arrival_us.parse::<u64>().map_err(|_| {
            at(line, "arrival_time_us", format!("expected whole microseconds ≥ 0, found \"{arrival_us}\""))
        })?;
        let prompt = tokens(line, "input_tokens", input, 1)?;
        let output = tokens(line, "output_tokens", output, 1)?;
        let session = if session.is_empty() { ordinal_key(rows.len() as u64) } else { text_key(session) };
        times.push(us);
        rows.push(RawRow { t: 0.0, prompt, output, n: 1, hash_ids: None, session, failed: false });
        Ok(())
    })?;
    let first = times.iter().copied().min().unwrap_or(0);
    for (row, us) in rows.iter_mut().zip(times) {
        row.t = (us - first) as f64 / 1e6;
    }
    Ok(Parsed { rows, origin: Some(0.0), hash_block_tokens: 16 })
}
