//! Mission mode in a real browser: linked documents' URLs are checked by the browser's URL
//! parser, and the mission panel's words read as a learner reads them. The rest of mission mode
//! is tested natively (tests/session_missions.rs).
#![cfg(target_arch = "wasm32")]

use kvlab::web::loader::url_problem;
use kvlab::web::mission_view::{format_metric, star_text};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn linked_documents_must_be_on_this_site_or_data_urls() {
    let page = "http://127.0.0.1:8080/lab/?mission_url=x";
    assert_eq!(url_problem("missions/mine.json", page), None);
    assert_eq!(url_problem("/other/path.json", page), None);
    assert_eq!(url_problem("data:application/json,%7B%7D", page), None);
    assert!(url_problem("http://192.0.2.1/p.json", page).unwrap().contains("another site"));
    assert!(url_problem("//192.0.2.1/p.json", page).unwrap().contains("another site"));
}

#[wasm_bindgen_test]
fn metrics_read_as_a_learner_reads_them() {
    assert_eq!(format_metric("kv.utilization_mean", 0.96), "96%");
    assert_eq!(format_metric("kv.utilization_mean", 0.4123), "41.2%");
    assert_eq!(format_metric("latency_ms.ttft_p95", 1000.0), "1,000 ms");
    assert_eq!(format_metric("latency_ms.tpot_p95", 14.25), "14.25 ms");
    assert_eq!(format_metric("config.kv_memory_gib", 10.0), "10 GiB");
    assert_eq!(format_metric("preemptions", 5.0), "5");
    assert_eq!(format_metric("paged_overhead", 0.25), "25%");
    assert_eq!(star_text(2), "★★☆");
}
