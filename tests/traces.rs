//! Trace readers by format (`formats::trace`, docs/TRACES.md): every real sample in
//! `../shared/traces/` reads with its request count and time span (computed here with plain
//! string operations), every format refuses a bad row naming its line and column, BurstGPT 3 is
//! read by column name with its failures dropped and counted, the options (window, speed,
//! sampling, replicas) and auto-detection, presets with trace arrivals, and `kvlab run --trace`.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::repo_path;
use kvlab::formats::trace::{read_trace, Replica, Trace, TraceFormat, TraceOptions};

fn sample(name: &str) -> String {
    let p = repo_path(&format!("../shared/traces/{name}"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn read(text: &str, format: TraceFormat) -> Trace {
    read_trace(text, &TraceOptions { format, ..TraceOptions::default() }).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str, format: TraceFormat) -> String {
    read_trace(text, &TraceOptions { format, ..TraceOptions::default() }).unwrap_err().to_string()
}

/// Data lines of a CSV with a header, and the `col`-th field of its first and last.
fn csv_facts(text: &str, col: usize) -> (usize, String, String) {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).skip(1).collect();
    let field = |l: &str| l.split(',').nth(col).unwrap().to_string();
    (lines.len(), field(lines[0]), field(lines[lines.len() - 1]))
}

/// `HH:MM:SS.fffffff` of an Azure 2023 timestamp (one day) in microseconds, by hand.
fn azure_us(ts: &str) -> i64 {
    let time = ts.split(' ').nth(1).unwrap();
    let (hms, frac) = time.split_once('.').unwrap();
    let p: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    (p[0] * 3600 + p[1] * 60 + p[2]) * 1_000_000 + frac[..6].parse::<i64>().unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn azure_samples_read_with_their_count_and_span() {
    for name in ["azure_llm_2023_code.head2000.csv", "azure_llm_2023_conv.head2000.csv"] {
        let text = sample(name);
        let (n, first, last) = csv_facts(&text, 0);
        let t = read(&text, TraceFormat::Auto);
        assert_eq!(t.format, TraceFormat::Azure);
        assert_eq!((t.rows.len(), t.rows_read), (n, n as u64), "{name}");
        assert_eq!(t.rows.len(), 2000);
        let span = (azure_us(&last) - azure_us(&first)) as f64 / 1e6;
        assert!(close(t.span_s, span), "{name}: {} vs {span}", t.span_s);
        assert_eq!(t.rows[0].arrival_s, 0.0);
        // Every arrival is a whole number of microseconds from the first: no float drift.
        let us = (t.rows[1].arrival_s * 1e6).round();
        assert!(close(t.rows[1].arrival_s, us / 1e6));
    }
}

#[test]
fn azure_reads_every_timestamp_flavour_mixed_in_one_file() {
    let text = "TIMESTAMP,ContextTokens,GeneratedTokens\n\
                2024-05-12 00:00:00.001163+00:00,1452,3\n\
                2024-05-12 00:00:01+00:00,584,3\n\
                2024-05-12 00:00:02.5000000,862,38\n\
                2024-05-12T00:00:03.269Z,1569,1\n";
    let t = read(text, TraceFormat::Auto);
    let at: Vec<f64> = t.rows.iter().map(|r| r.arrival_s).collect();
    assert_eq!(at, [0.0, 0.998837, 2.498837, 3.267837]);
    assert_eq!(t.rows[3].output_tokens, 1);
}

#[test]
fn vidur_and_splitwise_samples_read_with_their_count_and_span() {
    for name in ["vidur_splitwise_code.head2000.csv", "vidur_splitwise_conv.head2000.csv"] {
        let text = sample(name);
        let (n, first, last) = csv_facts(&text, 0);
        let t = read(&text, TraceFormat::Auto);
        assert_eq!(t.format, TraceFormat::Vidur);
        assert_eq!(t.rows.len(), n);
        let span = last.parse::<f64>().unwrap() - first.parse::<f64>().unwrap();
        assert!(close(t.span_s, span), "{name}");
    }
    let text = sample("splitwise_sim_test_trace.csv");
    let (n, first, last) = csv_facts(&text, 3);
    let t = read(&text, TraceFormat::Auto);
    assert_eq!(t.format, TraceFormat::Splitwise);
    assert_eq!(t.rows.len(), n);
    assert!(close(t.span_s, last.parse::<f64>().unwrap() - first.parse::<f64>().unwrap()));
    assert_eq!((t.rows[0].prompt_tokens, t.rows[0].output_tokens), (4096, 32));
}

/// The `timestamp` of a Mooncake line, by hand.
fn mooncake_ms(line: &str) -> f64 {
    let rest = line.split("\"timestamp\": ").nth(1).unwrap();
    rest[..rest.find(',').unwrap()].parse().unwrap()
}

#[test]
fn mooncake_samples_read_with_their_count_span_and_blocks() {
    for name in [
        "mooncake_fast25_conversation.head2000.jsonl",
        "mooncake_fast25_synthetic.head2000.jsonl",
        "mooncake_arxiv_trace.first20.quoted.jsonl",
    ] {
        let text = sample(name);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let t = read(&text, TraceFormat::Auto);
        assert_eq!(t.format, TraceFormat::Mooncake, "{name}");
        assert_eq!(t.rows.len(), lines.len());
        let span = (mooncake_ms(lines[lines.len() - 1]) - mooncake_ms(lines[0])) / 1000.0;
        assert!(close(t.span_s, span), "{name}");
        assert_eq!(t.hash_block_tokens, 512);
        for r in &t.rows {
            let ids = r.hash_ids.as_ref().expect("Mooncake rows carry hash ids");
            assert_eq!(ids.len() as u32, r.prompt_tokens.div_ceil(512));
        }
    }
    let t = read(&sample("mooncake_fast25_conversation.head2000.jsonl"), TraceFormat::Auto);
    assert_eq!(t.describe(), "mooncake, 2,000 requests over 669.0 s (0 failed rows dropped)");
}

#[test]
fn vllm_timed_reads_mooncake_keys_with_its_multiplier_and_chunk_size() {
    let text = sample("mooncake_fast25_conversation.head2000.jsonl");
    let plain = read(&text, TraceFormat::VllmTimed);
    assert_eq!(plain.hash_block_tokens, 16);
    assert!(close(plain.span_s, 669_000.0), "vLLM's default multiplier is 1");
    let o = TraceOptions {
        format: TraceFormat::VllmTimed,
        seconds_per_unit: 0.001,
        hash_block_tokens: 512,
        ..TraceOptions::default()
    };
    let t = read_trace(&text, &o).unwrap();
    assert_eq!(t.rows, read(&text, TraceFormat::Mooncake).rows);
    assert_eq!(t.hash_block_tokens, 512);
}

const BAILIAN: &str = r#"{"chat_id": 0, "parent_chat_id": -1, "timestamp": 0.0, "input_length": 502, "output_length": 1494, "type": "thinking", "turn": 1, "hash_ids": [0, 1, 2]}
{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 40, "output_length": 10, "type": "text", "turn": 1, "hash_ids": [7, 8, 9]}
{"chat_id": 2, "parent_chat_id": 0, "timestamp": 61.114, "input_length": 521, "output_length": 132, "type": "text", "turn": 2, "hash_ids": [0, 1, 2, 3]}
{"chat_id": 3, "parent_chat_id": 2, "timestamp": 90.25, "input_length": 700, "output_length": 5, "type": "text", "turn": 3, "hash_ids": [0, 1, 2, 3, 4]}
"#;

#[test]
fn bailian_reads_seconds_and_16_token_blocks() {
    let t = read(BAILIAN, TraceFormat::Auto);
    assert_eq!(t.format, TraceFormat::Bailian);
    assert_eq!((t.rows.len(), t.hash_block_tokens), (4, 16));
    assert!(close(t.span_s, 90.25));
    assert_eq!(t.rows[2].hash_ids.as_deref(), Some(&[0, 1, 2, 3][..]));
}

#[test]
fn bailian_sessions_stay_together_under_sampling_and_replicas() {
    // Many conversations of three turns; every kept turn's conversation is kept whole.
    let mut text = String::new();
    for c in 0..300u32 {
        let root = c * 3;
        for turn in 0..3 {
            let parent = if turn == 0 { -1 } else { i64::from(root + turn - 1) };
            text += &format!(
                "{{\"chat_id\": {}, \"parent_chat_id\": {parent}, \"timestamp\": {}.0, \"input_length\": {}, \"output_length\": 5}}\n",
                root + turn,
                c * 10 + turn,
                100 + c
            );
        }
    }
    for o in [
        TraceOptions { sample_one_in: 3, ..TraceOptions::default() },
        TraceOptions { replica: Some(Replica { index: 1, of: 4 }), ..TraceOptions::default() },
    ] {
        let t = read_trace(&text, &o).unwrap();
        assert!(!t.rows.is_empty());
        let mut per_conversation = std::collections::BTreeMap::new();
        for r in &t.rows {
            *per_conversation.entry(r.prompt_tokens).or_insert(0) += 1;
        }
        assert!(per_conversation.values().all(|&n| n == 3), "a conversation was split: {per_conversation:?}");
    }
}

fn burst3(rows: &[&str]) -> String {
    let mut s =
        String::from("Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n");
    for r in rows {
        s += r;
        s.push('\n');
    }
    s
}

#[test]
fn burstgpt_reads_by_column_name_and_drops_failures() {
    let v1 = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
              5,ChatGPT,472,18,490,Conversation log\n\
              45,ChatGPT,1087,230,1317,Conversation log\n\
              50,GPT-4,0,0,0,API log\n\
              118,GPT-4,417,276,693,Conversation log\n";
    let t = read(v1, TraceFormat::Auto);
    assert_eq!(t.format, TraceFormat::Burstgpt);
    assert_eq!((t.rows.len(), t.dropped_failed, t.rows_read), (3, 1, 4));
    assert_eq!((t.rows[0].arrival_s, t.rows[0].prompt_tokens, t.rows[0].output_tokens), (0.0, 472, 18));
    assert!(close(t.span_s, 113.0));

    let v3 = burst3(&[
        "5,s1,2.5,ChatGPT,472,18,490,Conversation log",
        "9,,1.0,ChatGPT,30,0,30,API log",
        "45,s1,7.25,ChatGPT,1087,230,1317,Conversation log",
        "60,,3.5,GPT-4,417,276,693,API log",
    ]);
    let t = read(&v3, TraceFormat::Auto);
    assert_eq!(t.format, TraceFormat::Burstgpt);
    assert_eq!((t.rows.len(), t.dropped_failed), (3, 1));
    let got: Vec<(f64, u32, u32)> = t.rows.iter().map(|r| (r.arrival_s, r.prompt_tokens, r.output_tokens)).collect();
    assert_eq!(got, [(0.0, 472, 18), (40.0, 1087, 230), (55.0, 417, 276)], "Elapsed time is not a token count");
    assert!(t.describe().ends_with("(1 failed rows dropped)"));

    let keep = TraceOptions { drop_failed: false, ..TraceOptions::default() };
    let e = read_trace(&v3, &keep).unwrap_err().to_string();
    assert!(e.starts_with("line 3, column Response tokens: a failed request"), "{e}");
}

#[test]
fn burstgpt_3_sessions_stay_together() {
    let mut rows = Vec::new();
    for s in 0..200 {
        for turn in 0..2 {
            rows.push(format!("{},sess{s},1.0,ChatGPT,{},10,0,Conversation log", s * 10 + turn, 100 + s));
        }
    }
    let refs: Vec<&str> = rows.iter().map(String::as_str).collect();
    let text = burst3(&refs);
    let t = read_trace(&text, &TraceOptions { sample_one_in: 4, ..TraceOptions::default() }).unwrap();
    assert!(!t.rows.is_empty() && t.rows.len() % 2 == 0);
    for pair in t.rows.chunks(2) {
        assert_eq!(pair[0].prompt_tokens, pair[1].prompt_tokens, "a session's two turns are kept together");
    }
}

#[test]
fn blis_reads_microseconds_after_its_yaml_header() {
    let text = "trace_version: 2\ntime_unit: microseconds\nmode: real\nwarm_up_requests: 0\n\
        request_id,client_id,tenant_id,slo_class,session_id,round_index,prefix_group,prefix_length,streaming,input_tokens,output_tokens,text_tokens,image_tokens,audio_tokens,video_tokens,reason_ratio,model,deadline_us,server_input_tokens,arrival_time_us,send_time_us,first_chunk_time_us,last_chunk_time_us,num_chunks,status,error_message,finish_reason\n\
        0,c1,t1,standard,s1,0,,0,true,10,5,10,0,0,0,0.0,,0,10,1000,1000,5000,10000,5,ok,,stop\n\
        1,c1,t1,standard,s1,1,,0,true,30,7,30,0,0,0,0.0,,0,30,2501000,2501000,2600000,2700000,5,ok,,stop\n";
    let t = read(text, TraceFormat::Auto);
    assert_eq!(t.format, TraceFormat::Blis);
    assert_eq!(t.rows.len(), 2);
    assert_eq!(t.rows[1].arrival_s, 2.5);
    assert_eq!((t.rows[1].prompt_tokens, t.rows[1].output_tokens), (30, 7));
    let bad = text.replace("30,7,30", "30,x,30");
    assert_eq!(
        err(&bad, TraceFormat::Auto),
        "line 7, column output_tokens: expected a whole number of tokens, found \"x\""
    );
    let ms = text.replace("microseconds", "milliseconds");
    assert!(err(&ms, TraceFormat::Blis).starts_with("line 2, column time_unit"));
}

#[test]
fn a_bad_row_is_refused_naming_its_line_and_column() {
    use TraceFormat::*;
    let cases: &[(&str, TraceFormat, &str)] = &[
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n\n2023-11-16 18:17:04.0319600,abc,8\n",
            Azure,
            "line 4, column ContextTokens: expected a whole number of tokens, found \"abc\"",
        ),
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,4808,0\n",
            Azure,
            "line 2, column GeneratedTokens: expected at least 1 token, found 0",
        ),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-16 18:17:03,4808,1\n", Azure, "line 2, column TIMESTAMP: "),
        ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,x,1,1,API log\n", Burstgpt, "line 2, column Request tokens: "),
        ("arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,1,1\n-1,2,2\n", Vidur, "line 3, column arrived_at: "),
        ("request_id,request_type,application_id,arrival_timestamp,batch_size,prompt_size,token_size\n0,2,0,1,1,0,32\n", Splitwise, "line 2, column prompt_size: expected at least 1 token"),
        ("{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n{\"timestamp\": 3, \"input_length\": \"ten\", \"output_length\": 5}\n", Mooncake, "line 2, column input_length: expected a whole number of tokens, found \"ten\""),
        ("{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [1, -2]}\n", Mooncake, "line 1, column hash_ids: "),
        ("{\"timestamp\": 0, \"input_length\": 10}\n", VllmTimed, "line 1: missing key \"output_length\""),
        ("{\"chat_id\": 0, \"parent_chat_id\": -1, \"timestamp\": -3, \"input_length\": 10, \"output_length\": 5}\n", Bailian, "line 1, column timestamp: "),
        ("0,10,10\n-1,10,10\n", Kvlab, "line 2: arrival_s must be a number of seconds ≥ 0, found \"-1\""),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,1,1,9\n", Azure, "line 2: expected 3 columns as the header has, found 4"),
    ];
    for (text, format, want) in cases {
        let e = err(text, *format);
        assert!(e.starts_with(want), "{format:?}: {e}\n  wanted: {want}");
        // auto finds the same format and the same error.
        assert_eq!(err(text, Auto), e);
    }
}

#[test]
fn a_missing_column_is_refused_naming_it() {
    let e = err("Timestamp,Model,Request tokens,Total tokens\n5,ChatGPT,1,1\n", TraceFormat::Burstgpt);
    assert!(e.contains("needs a column \"Response tokens\""), "{e}");
    let e = err("arrived_at,num_prefill_tokens,num_decode_tokens\n0,1,1\n", TraceFormat::Azure);
    assert!(e.starts_with("line 1: the azure format needs a column \"TIMESTAMP\""), "{e}");
}

#[test]
fn what_is_not_a_request_trace_is_refused_saying_what_it_is() {
    let cases = [
        ("servegen_language_m-large_chunk-1-trace.csv", "ServeGen per-client rate table"),
        ("servegen_reason_deepseek-r1_chunk-1-trace.csv", "ServeGen per-client rate table"),
        ("servegen_language_m-large_chunk-1-dataset.json", "ServeGen per-client dataset"),
        ("servegen_offline_trace_a.first20.jsonl", "no arrival times"),
        ("servegen_offline_trace_d.first40.jsonl", "ServeGen offline batch trace"),
        ("vidur_arxiv_summarization_lengths.head2000.csv", "arrived_at"),
    ];
    for (name, what) in cases {
        let e = err(&sample(name), TraceFormat::Auto);
        assert!(e.contains(what), "{name}: {e}");
        assert!(e.contains("vllm-timed, vidur, splitwise, blis"), "the formats are listed: {e}");
    }
    let e = err("id,when,what\n1,2,3\n", TraceFormat::Auto);
    assert!(e.contains("\"id,when,what\"") && e.contains("auto, kvlab, azure"), "{e}");
}

#[test]
fn the_window_and_speed_apply_in_order() {
    let text = sample("mooncake_fast25_conversation.head2000.jsonl");
    let all = read(&text, TraceFormat::Mooncake);
    let o = TraceOptions { start_s: 60.0, end_s: Some(120.0), speed: 2.0, ..TraceOptions::default() };
    let t = read_trace(&text, &o).unwrap();
    let want: Vec<f64> = all
        .rows
        .iter()
        .filter(|r| r.arrival_s >= 60.0 && r.arrival_s < 120.0)
        .map(|r| (r.arrival_s - 60.0) / 2.0)
        .collect();
    assert!(!want.is_empty());
    assert_eq!(t.rows.iter().map(|r| r.arrival_s).collect::<Vec<_>>(), want);
    assert!(t.rows.iter().all(|r| r.arrival_s < 30.0));
    assert_eq!(t.rows_read, 2000);
}

#[test]
fn sampling_keeps_about_one_in_k_deterministically() {
    let text = sample("azure_llm_2023_conv.head2000.csv");
    let o = TraceOptions { sample_one_in: 4, ..TraceOptions::default() };
    let a = read_trace(&text, &o).unwrap();
    assert_eq!(a, read_trace(&text, &o).unwrap(), "the same options keep the same rows");
    assert!((400..600).contains(&a.rows.len()), "kept {} of 2000", a.rows.len());
}

#[test]
fn replica_shares_partition_the_trace() {
    let text = sample("mooncake_fast25_synthetic.head2000.jsonl");
    let all = read(&text, TraceFormat::Auto);
    let mut union = Vec::new();
    for index in 0..3 {
        let o = TraceOptions { replica: Some(Replica { index, of: 3 }), ..TraceOptions::default() };
        let t = read_trace(&text, &o).unwrap();
        assert!((500..830).contains(&t.rows.len()), "replica {index}: {}", t.rows.len());
        union.extend(t.rows);
    }
    assert_eq!(union.len(), all.rows.len(), "no row lost or duplicated");
    let key = |r: &kvlab::engine::workload::TraceRow| (r.arrival_s.to_bits(), r.prompt_tokens, r.output_tokens);
    let mut a: Vec<_> = union.iter().map(key).collect();
    let mut b: Vec<_> = all.rows.iter().map(key).collect();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
}

#[test]
fn options_out_of_range_are_refused_naming_them() {
    let text = "0,10,10\n";
    let e = |o: TraceOptions| read_trace(text, &o).unwrap_err().to_string();
    assert!(e(TraceOptions { speed: 0.0, ..TraceOptions::default() }).starts_with("speed must be a factor > 0"));
    assert!(e(TraceOptions { sample_one_in: 0, ..TraceOptions::default() }).starts_with("sample_one_in must be from 1"));
    assert!(e(TraceOptions { replica: Some(Replica { index: 4, of: 4 }), ..TraceOptions::default() })
        .starts_with("replica.index must be from 0 to 3"));
    assert!(e(TraceOptions { start_s: 5.0, end_s: Some(5.0), ..TraceOptions::default() })
        .starts_with("end_s must be after"));
}

fn preset_with(arrival: &str) -> String {
    format!(r#"{{"schema": "kvlab/preset@1", "workload": {{"arrival": {arrival}}}}}"#)
}

#[test]
fn presets_take_a_trace_by_format_with_its_options() {
    use kvlab::formats::preset::parse_preset;
    let text = serde_json::to_string(&sample("mooncake_fast25_conversation.head2000.jsonl")).unwrap();
    let config = parse_preset(&preset_with(&format!(
        r#"{{"kind": "trace", "format": "mooncake", "text": {text}, "end_s": 60, "replica": {{"index": 0, "of": 2}}}}"#
    )))
    .unwrap();
    match &config.workload.arrival {
        kvlab::engine::workload::Arrival::Trace { rows, hash_block_tokens, .. } => {
            assert_eq!(*hash_block_tokens, 512);
            assert!(!rows.is_empty() && rows.iter().all(|r| r.arrival_s < 60.0));
        }
        other => panic!("{other:?}"),
    }
    let e = parse_preset(&preset_with(r#"{"kind": "trace", "text": "0,10,10", "speed": -1}"#)).unwrap_err();
    assert_eq!(e.field, "workload.arrival.speed");
    assert!(e.message.contains("> 0"), "{e}");
    let e = parse_preset(&preset_with(
        r#"{"kind": "trace", "text": "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,x,1\n"}"#,
    ))
    .unwrap_err();
    assert_eq!(e.field, "workload.arrival.text");
    assert!(e.message.starts_with("line 2, column ContextTokens"), "{e}");
    let e = parse_preset(&preset_with(r#"{"kind": "trace", "csv": "0,10,10\n-1,1,1"}"#)).unwrap_err();
    assert_eq!(e.field, "workload.arrival.csv");
    let e = parse_preset(&preset_with(r#"{"kind": "trace", "text": "0,1,1", "format": "parquet"}"#)).unwrap_err();
    assert!(e.field.starts_with("workload.arrival"), "{e}");
}

#[test]
fn an_old_trace_preset_serializes_as_it_was() {
    use kvlab::formats::preset::parse_preset_dto;
    let old = r#"{"kind":"trace","csv":"0,100,20\n","max_tokens":512}"#;
    let dto = parse_preset_dto(&preset_with(old)).unwrap();
    assert_eq!(serde_json::to_string(&dto.workload.arrival).unwrap(), old);
}

fn kvlab(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_kvlab")).args(args).output().expect("kvlab runs")
}

#[test]
fn run_replays_a_mooncake_window_and_says_what_it_read() {
    let preset = repo_path("assets/presets/paged-default.json");
    let trace = repo_path("../shared/traces/mooncake_fast25_conversation.head2000.jsonl");
    let o = kvlab(&["run", preset.to_str().unwrap(), "--trace", trace.to_str().unwrap(), "--trace-window", "0:60"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = out.lines().find(|l| l.starts_with("trace: mooncake, ")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.ends_with("(0 failed rows dropped)"), "{line}");
}

#[test]
fn run_refuses_bad_trace_flags_naming_them() {
    let preset = repo_path("assets/presets/paged-default.json");
    let trace = repo_path("../shared/traces/splitwise_sim_test_trace.csv");
    let (p, t) = (preset.to_str().unwrap(), trace.to_str().unwrap());
    for (flag, value, want) in [
        ("--trace-window", "60", "START:END"),
        ("--trace-replica", "4", "INDEX/COUNT"),
        ("--trace-format", "parquet", "use one of auto, kvlab"),
        ("--trace-speed", "0", "--trace-speed: speed must be a factor > 0"),
        ("--trace-replica", "3/3", "--trace-replica: replica.index must be from 0 to 2"),
    ] {
        let o = kvlab(&["run", p, "--trace", t, flag, value]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && e.contains(want), "{flag} {value}: {e}");
        assert!(e.contains(flag), "{flag} {value}: {e}");
    }
}
