//! Shared helpers of the browser end-to-end tests (tests/e2e_*.rs): the release bundle in
//! dist/ served from 127.0.0.1 by a tiny static server, chromedriver started on a free port,
//! a headless Chromium session through fantoccini, scripts, reports and screenshots.
//!
//! Every page runs under its strict Content-Security-Policy (the `<meta>` in www/index.html):
//! [`open`] checks that the page carries it, and [`open`], [`open_hub`] and [`Browser::close`]
//! fail the test when Chromium reported any violation since the last check (Chromium logs
//! each one, from any frame, to the browser log that chromedriver hands out; nothing in the
//! page listens for them).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};

pub fn dist_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("dist")
}

/// Fails (never skips) when the bundle is missing or was built from other sources than those on
/// disk (`scripts/sources-digest.sh`, written into `dist/.sources-digest` by
/// `scripts/test-web.sh`), saying how to build it.
pub fn require_dist() -> PathBuf {
    let dist = dist_dir();
    assert!(
        dist.join("index.html").is_file(),
        "dist/index.html is missing: build the lab and run the browser tests with `scripts/test-web.sh`"
    );
    let built = std::fs::read_to_string(dist.join(".sources-digest")).unwrap_or_default();
    let out =
        std::process::Command::new(repo_path("scripts/sources-digest.sh")).output().expect("run sources-digest.sh");
    let now = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && built.trim() == now.trim(),
        "dist/ is not the bundle of the current sources (built from {:?}, sources are {:?}): run the browser \
         tests with `scripts/test-web.sh`, which builds it first",
        built.trim(),
        now.trim()
    );
    dist
}

/// A copy of dist/'s files (not its folders) in a fresh temporary folder named after `tag`,
/// less those `leave_out` names: dist/ as a server missing them serves it.
pub fn dist_without(tag: &str, leave_out: impl Fn(&str) -> bool) -> PathBuf {
    let dist = require_dist();
    let root = std::env::temp_dir().join(format!("kvlab-e2e-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    for entry in std::fs::read_dir(&dist).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_file() && !leave_out(&name) {
            std::fs::copy(&path, root.join(&name)).unwrap();
        }
    }
    root
}

/// The bundle with the `test-hooks` feature (`kvlab.testPanic()`…), which scripts/test-web.sh
/// builds beside the release bundle.
pub fn require_test_hooks_dist() -> PathBuf {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dist-test-hooks");
    assert!(
        dist.join("index.html").is_file(),
        "target/dist-test-hooks/index.html is missing: build it with `scripts/test-web.sh` (or \
         `trunk build --offline --features test-hooks --dist target/dist-test-hooks`)"
    );
    dist
}

pub fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css",
        Some("json") => "application/json",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        Some("md") => "text/markdown; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Serves `root` on 127.0.0.1 (GET only); returns the base URL.
pub async fn serve(root: PathBuf) -> String {
    serve_slowly(root, "", std::time::Duration::ZERO).await
}

/// [`serve`], holding back the files whose path ends with `slow` (when not empty) for `delay`
/// before answering, as a slow network would.
pub async fn serve_slowly(root: PathBuf, slow: &'static str, delay: std::time::Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the static server");
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { continue };
            let root = root.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]);
                let target = req.split_whitespace().nth(1).unwrap_or("/");
                let path = target.split(['?', '#']).next().unwrap_or("/");
                let rel = if path == "/" { "index.html" } else { path.trim_start_matches('/') };
                if !slow.is_empty() && rel.ends_with(slow) {
                    tokio::time::sleep(delay).await;
                }
                let file = root.join(rel);
                let (status, body, ctype) = if rel.contains("..") {
                    ("403 Forbidden", b"forbidden".to_vec(), "text/plain")
                } else {
                    match std::fs::read(&file) {
                        Ok(b) => ("200 OK", b, content_type(&file)),
                        Err(_) => ("404 Not Found", b"not found".to_vec(), "text/plain"),
                    }
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&body).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    format!("http://{addr}/")
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// chromedriver on a free port and a session on it. The guard of everything the session
/// started: dropping it, whether the test passed, failed or panicked, kills chromedriver's
/// whole process group (chromedriver runs in a group of its own, and Chromium with its helpers
/// in it), then every process still naming this session's profile directory (Chromium's
/// crash handler leaves the group), and removes the profile.
pub struct Browser {
    pub client: Client,
    driver: Child,
    profile: PathBuf,
}

impl Browser {
    /// Ends the session after checking that no page broke its Content-Security-Policy; the
    /// processes go when `self` is dropped at the end.
    pub async fn close(self) {
        assert_no_csp_violations(&self.client).await;
        self.client.clone().close().await.expect("close the browser session");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(pid) = self.driver.id() {
            // chromedriver leads its process group: the group's id is its pid.
            kill_quietly(&format!("-{pid}"));
        }
        let _ = self.driver.start_kill();
        for pid in processes_naming(&self.profile) {
            kill_quietly(&pid.to_string());
        }
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// SIGKILL to a pid (or to a process group, as `-pgid`), ignoring a target already gone.
fn kill_quietly(target: &str) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", target])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// The processes whose command line names `path` as a whole argument or a directory above one
/// (from `/proc/<pid>/cmdline`, whose arguments end in NUL), so `…-4567` never matches `…-45678`.
pub fn processes_naming(path: &Path) -> Vec<u32> {
    let path = path.to_string_lossy();
    let (arg, dir) = (format!("{path}\0"), format!("{path}/"));
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmd| {
                let cmd = String::from_utf8_lossy(&cmd);
                cmd.contains(arg.as_str()) || cmd.contains(dir.as_str())
            })
        })
        .collect()
}

/// The policy every page of the lab carries: nothing inline, nothing from other sites.
pub const LAB_CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; \
    img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'";

/// chromedriver's `POST /session/{id}/se/log`: the browser log since the last read.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(json!({ "type": "browser" }).to_string()))
    }
}

/// The Content-Security-Policy violations Chromium reported since the last call (any frame).
pub async fn csp_violations(c: &Client) -> Vec<String> {
    let log = c.issue_cmd(BrowserLog).await.expect("read the browser log");
    let entries = log.as_array().cloned().unwrap_or_default();
    entries
        .iter()
        .filter(|e| {
            e["source"] == "security" && e["message"].as_str().is_some_and(|m| m.contains("Content Security Policy"))
        })
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

pub async fn assert_no_csp_violations(c: &Client) {
    let v = csp_violations(c).await;
    assert!(v.is_empty(), "the page broke its Content-Security-Policy:\n{}", v.join("\n"));
}

pub async fn browser(width: u32, height: u32) -> Browser {
    browser_with(width, height, &[]).await
}

/// A session whose Chromium gets `extra` command-line switches too (`--force-dark-mode`, …).
pub async fn browser_with(width: u32, height: u32, extra: &[&str]) -> Browser {
    let driver_bin = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
    let port = free_port();
    let driver = Command::new(&driver_bin)
        .arg(format!("--port={port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {driver_bin} ({e}); run scripts/setup.sh to install chromium-driver"));
    let profile = std::env::temp_dir().join(format!("kvlab-e2e-{}-{port}", std::process::id()));
    let mut args = vec![
        "--headless".to_string(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-quic".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-dev-shm-usage".into(),
        format!("--window-size={width},{height}"),
        format!("--user-data-dir={}", profile.display()),
    ];
    args.push("--hide-scrollbars".into());
    args.extend(extra.iter().map(|a| a.to_string()));
    let mut chrome = json!({ "args": args });
    if Path::new("/usr/bin/chromium").exists() {
        chrome["binary"] = json!("/usr/bin/chromium");
    }
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), chrome);
    caps.insert("goog:loggingPrefs".into(), json!({ "browser": "ALL" }));
    let url = format!("http://127.0.0.1:{port}");
    let mut last_err = String::new();
    for _ in 0..100 {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector).capabilities(caps.clone()).connect(&url).await {
            Ok(client) => return Browser { client, driver, profile },
            Err(e) => last_err = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no WebDriver session on {url}: {last_err}");
}

pub async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap_or_else(|e| panic!("script failed: {script}\n{e}"))
}

/// Opens the lab and waits until `window.kvlab` is there.
pub async fn open(c: &Client, url: &str) {
    c.goto(url).await.expect("load the lab");
    for _ in 0..200 {
        if js(c, "return !!(window.kvlab && document.getElementById('kvlab').dataset.ready)").await == json!(true) {
            let csp = js(c, "const m = document.querySelector('meta[http-equiv=\"Content-Security-Policy\"]'); return m && m.content").await;
            assert_eq!(csp.as_str(), Some(LAB_CSP), "the page does not carry the lab's Content-Security-Policy");
            assert_no_csp_violations(c).await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let body = js(c, "return document.body.innerText.slice(0, 500)").await;
    panic!("the lab did not become ready at {url}; page says: {body}");
}

/// Every number as a float. The page hands reports over as JavaScript objects, where 60.0 and
/// 60 are one number, while the native report keeps integers and floats apart: compared in
/// this form, two reports are equal when every number is (bit for bit up to 2^53).
pub fn numbers_as_floats(v: Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64().expect("a JSON number")),
        Value::Array(a) => Value::Array(a.into_iter().map(numbers_as_floats).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, numbers_as_floats(v))).collect()),
        other => other,
    }
}

/// `kvlab.report()` (an object), numbers as floats (see [`numbers_as_floats`]).
pub async fn report(c: &Client) -> Value {
    let report = js(c, "return kvlab.report()").await;
    assert!(report.is_object(), "report() is an object: {report}");
    numbers_as_floats(report)
}

/// Share of the map canvas's pixels that are not background (white).
pub async fn map_coverage(c: &Client, id: &str) -> f64 {
    let script = format!(
        "const c = document.getElementById('{id}'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; \
         let n = 0; for (let i = 0; i < d.length; i += 4) {{ if (d[i] !== 255 || d[i+1] !== 255 || d[i+2] !== 255) n++; }} \
         return [n, c.width * c.height];"
    );
    let v = js(c, &script).await;
    let (n, total) = (v[0].as_f64().unwrap(), v[1].as_f64().unwrap());
    assert!(total > 1000.0, "the map canvas {id} has no size ({total} px)");
    n / total
}

/// The report of a shipped preset run to the end by the native engine.
pub fn native_report(id: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("assets/presets/{id}.json"));
    let config = kvlab::formats::preset::parse_preset(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut sim = kvlab::engine::Simulation::new(config).unwrap();
    numbers_as_floats(serde_json::to_value(sim.run_to_end()).unwrap())
}

pub async fn save_screenshot(c: &Client, name: &str) {
    let png = c.screenshot().await.expect("screenshot");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), png).unwrap();
}

/// Waits until `condition` (a JS expression) is true; panics with `what` after ~10 s.
pub async fn wait_for(c: &Client, condition: &str, what: &str) {
    for _ in 0..200 {
        if js(c, &format!("return !!({condition})")).await == json!(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let body = js(c, "return document.body.innerText.slice(0, 800)").await;
    panic!("timed out waiting for {what} ({condition}); page says: {body}");
}

/// Opens the missions hub (hub.html) and waits until it has drawn its list.
pub async fn open_hub(c: &Client, base: &str) {
    c.goto(&format!("{base}hub.html")).await.expect("load the hub");
    wait_for(c, "document.getElementById('hub') && document.getElementById('hub').dataset.ready === 'true'", "the hub")
        .await;
    assert_no_csp_violations(c).await;
}

pub fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Sizes the window so that the page's viewport is `w` × `h` CSS pixels (what an iframe of
/// that size gives the page).
pub async fn set_viewport(c: &Client, w: u32, h: u32) {
    c.set_window_size(w, h).await.expect("resize");
    let v = js(c, "return [window.innerWidth, window.innerHeight]").await;
    let (iw, ih) = (v[0].as_u64().unwrap() as u32, v[1].as_u64().unwrap() as u32);
    c.set_window_size(2 * w - iw, 2 * h - ih).await.expect("resize");
}

/// Percent-encodes everything but RFC 3986's unreserved characters (for `?preset_url=` links).
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Opens the Load dialog as a reader does: the click that, on the first view's module, loads the
/// full one, which opens the dialog (src/web/full_lab.rs); waits until it is open.
pub async fn open_load_dialog(c: &Client) {
    c.find(fantoccini::Locator::Id("load-btn")).await.expect("the Load button").click().await.expect("click Load");
    wait_for(c, "document.getElementById('load-dialog').open", "the Load dialog to open").await;
}

/// Waits until the page runs its full module and has done what the first view handed over
/// (www/boot.js): after a handle call only the full lab applies (a mission, a document, a sweep).
pub async fn wait_full(c: &Client) {
    wait_for(c, "document.documentElement.dataset.module === 'full'", "the full lab").await;
}

/// Types `text` into the Preset JSON editor (opening it) and presses its Load button, as a reader
/// does.
pub async fn apply_in_json_editor(c: &Client, text: &str) {
    let script = format!(
        "document.getElementById('json-editor').open = true; const ta = document.getElementById('preset-json'); \
         ta.value = {}; document.querySelector('[data-action=apply-json]').click(); return null",
        serde_json::json!(text)
    );
    js(c, &script).await;
}
