//! `auto`: which format a trace is, from its header line (CSV) or its first object's keys
//! (JSON lines); and the files that look like traces but are not request traces (ServeGen's rate
//! tables and length distributions, ServeGen's offline batches, Vidur's length-only files),
//! refused with what they are and what they lack.

use serde_json::Value;

use super::csv_formats::blis_header;
use super::rows::TraceFormat;

/// The format of a trace's text, or why it is none of them.
pub fn detect_format(text: &str) -> Result<TraceFormat, String> {
    let Some(first) = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')) else {
        return Err(format!("the trace is empty; give one of the formats {}", TraceFormat::ids()));
    };
    if first.starts_with('{') {
        return detect_json(text, first);
    }
    if first.starts_with('[') {
        return Err(refuse(
            "a JSON array (ShareGPT-style conversations, for instance) is not a request trace: it has no arrival times",
        ));
    }
    let names: Vec<&str> = first.split(',').map(|c| c.trim().trim_matches('"')).collect();
    let has = |n: &str| names.contains(&n);
    if has("TIMESTAMP") && has("ContextTokens") && has("GeneratedTokens") {
        return Ok(TraceFormat::Azure);
    }
    if has("Timestamp") && has("Request tokens") && has("Response tokens") {
        return Ok(TraceFormat::Burstgpt);
    }
    if has("arrived_at") && has("num_prefill_tokens") {
        return Ok(TraceFormat::Vidur);
    }
    if has("num_prefill_tokens") && has("num_decode_tokens") {
        return Err(refuse(
            "this is a Vidur length-only trace (num_prefill_tokens, num_decode_tokens): it has no arrival times \
             (Vidur's trace replay needs a column arrived_at)",
        ));
    }
    if has("arrival_timestamp") && has("prompt_size") {
        return Ok(TraceFormat::Splitwise);
    }
    if has("arrival_s") || (names.len() == 3 || names.len() == 4) && names[0].parse::<f64>().is_ok() {
        return Ok(TraceFormat::Kvlab);
    }
    if names.len() == 6 && names[0].parse::<f64>().is_ok() && matches!(names[3], "" | "Gamma" | "Weibull") {
        return Err(refuse(
            "this is a ServeGen per-client rate table (timestamp,rate,cv,pattern,shape,scale per 600 s window): \
             it describes arrival rates, not requests; it has no request rows and no token counts",
        ));
    }
    if blis_header(text).is_some() {
        return Ok(TraceFormat::Blis);
    }
    Err(refuse(&format!("the first line is \"{}\" (columns: {})", clip(first), names.join(", "))))
}

fn detect_json(text: &str, first: &str) -> Result<TraceFormat, String> {
    match serde_json::from_str::<Value>(first) {
        Ok(Value::Object(m)) => {
            let has = |k: &str| m.contains_key(k);
            if has("chat_id") && has("parent_chat_id") {
                return Ok(TraceFormat::Bailian);
            }
            if has("timestamp") && (has("input_length") || has("output_length")) {
                return Ok(TraceFormat::Mooncake);
            }
            if has("request_id") && has("input_length") && !has("timestamp") {
                return Err(refuse(
                    "this is a ServeGen offline batch trace (request_id, input_length, …): it has no arrival \
                     times (no key timestamp); its requests are all submitted at once",
                ));
            }
            let keys: Vec<&str> = m.keys().map(String::as_str).collect();
            Err(refuse(&format!("the first line is a JSON object with the keys {}", keys.join(", "))))
        }
        _ => {
            if let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(text) {
                let windows = doc.values().all(|v| v.get("input_tokens").is_some() || v.get("output_tokens").is_some());
                if windows && !doc.is_empty() {
                    return Err(refuse(
                        "this is a ServeGen per-client dataset (length distributions per 6-hour window): it has no \
                         requests and no arrival times",
                    ));
                }
                return Err(refuse("this is one JSON document, not JSON lines (one request per line)"));
            }
            Err(refuse(&format!("the first line \"{}\" is not a JSON object", clip(first))))
        }
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s.to_string()
    }
}

fn refuse(what: &str) -> String {
    format!("not a request trace kvlab reads: {what}; the formats are {} (docs/TRACES.md)", TraceFormat::ids())
}
