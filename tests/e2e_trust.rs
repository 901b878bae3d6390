//! End-to-end tests (dist/ in headless Chromium, real localStorage) of what instructors and
//! learners rely on around loading: the Load dialog runs `kvlab check`'s mission check and
//! shows its verdict in the CLI's words, a stale refusal clears once a later load succeeds, a
//! loaded preset's title is in the header and the picker, the custom missions played are on
//! the hub with their stars (and a corrupt list costs nothing), and the "Embed" button's
//! snippet reproduces the lab.
#![cfg(not(target_arch = "wasm32"))]

mod common_e2e;

use common_e2e::{browser, js, open, open_hub, repo_path, require_dist, save_screenshot, serve, urlencode, wait_for};
use fantoccini::{Client, Locator};
use kvlab::missions::check::check_mission;
use kvlab::missions::mission::parse_mission;
use serde_json::{json, Value};

async fn text(c: &Client, css: &str) -> String {
    js(c, &format!("return document.querySelector({}).textContent", json!(css))).await.as_str().unwrap().to_string()
}

async fn shown(c: &Client, id: &str) -> bool {
    c.find(Locator::Id(id)).await.unwrap().is_displayed().await.unwrap()
}

/// Pastes `doc` into the Load dialog and presses Load.
async fn load_in_dialog(c: &Client, doc: &str) {
    if !shown(c, "load-dialog").await {
        common_e2e::open_load_dialog(c).await;
    }
    js(
        c,
        &format!("document.getElementById('load-text').value = {}; return null", serde_json::to_string(doc).unwrap()),
    )
    .await;
    c.find(Locator::Id("load-apply")).await.unwrap().click().await.unwrap();
}

fn example() -> String {
    std::fs::read_to_string(repo_path("assets/missions/examples/first-mission.json")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_load_dialog_runs_the_mission_check_and_says_why_a_mission_is_not_valid() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0")).await;

    // A valid mission (broken 0 stars, fix 3): the dialog closes and the page says it passed.
    load_in_dialog(c, &example()).await;
    assert!(!shown(c, "load-dialog").await, "the dialog closes on a valid mission");
    let errors = js(c, "return kvlab.errors().join(' | ')").await;
    assert!(errors.as_str().unwrap().contains("Mission check passed"), "{errors}");

    // Its broken setup already meets star 1: loaded and playable, but the dialog says plainly
    // why it is not a valid mission, in the CLI's words.
    let lenient = example().replace("\"value\": 0.3", "\"value\": 0.01");
    let expected = check_mission(&parse_mission(&lenient).unwrap()).unwrap().problem().expect("the check fails");
    assert!(expected.contains("the broken setup already earns 1 star(s)"), "{expected}");
    load_in_dialog(c, &lenient).await;
    wait_for(c, "!document.getElementById('load-verdict').hidden", "the verdict").await;
    assert!(shown(c, "load-dialog").await, "the dialog stays open to say why");
    let verdict = text(c, "#load-verdict").await;
    assert!(verdict.starts_with("Not a valid mission:") && verdict.contains(&expected), "{verdict}");
    assert!(!shown(c, "load-error").await);
    assert_eq!(text(c, "#mission-title").await, "Reserve for the request, not for the model", "it can be played");
    assert!(js(c, "return kvlab.errors().join(' | ')").await.as_str().unwrap().contains(&expected));
    c.find(Locator::Id("load-cancel")).await.unwrap().click().await.unwrap();

    // A fix that misses star 3 is named the same way.
    let strict = example().replace("\"value\": 10, \"stars\": 3", "\"value\": 5, \"stars\": 3");
    let expected = check_mission(&parse_mission(&strict).unwrap()).unwrap().problem().expect("the check fails");
    assert!(expected.starts_with("the fix earns 2 star(s), not 3"), "{expected}");
    assert!(expected.contains("(star 3: “") && expected.contains("goal <= 5)"), "the missed goal is named: {expected}");
    load_in_dialog(c, &strict).await;
    wait_for(c, "!document.getElementById('load-verdict').hidden", "the verdict").await;
    assert!(text(c, "#load-verdict").await.contains(&expected));

    // A refusal is not a verdict: the previous verdict goes, the error is shown.
    load_in_dialog(c, r#"{"schema": "kvlab/preset@1", "kv_memory_gib": "lots"}"#).await;
    wait_for(c, "!document.getElementById('load-error').hidden", "the error").await;
    assert!(!shown(c, "load-verdict").await);

    // From a link the check runs too: a learner hears about a mission that is not valid, and
    // nothing about one that is.
    for (doc, says) in [(example(), None), (lenient, Some("the broken setup already earns 1 star(s)"))] {
        let url = format!(
            "{base}?autoplay=0&mission_url={}",
            urlencode(&format!("data:application/json,{}", urlencode(&doc)))
        );
        open(c, &url).await;
        wait_for(c, "document.getElementById('mission-title').textContent.startsWith('Reserve')", "the mission").await;
        let errors = js(c, "return kvlab.errors().join(' | ')").await.as_str().unwrap().to_string();
        match says {
            Some(problem) => assert!(errors.contains(problem), "{errors}"),
            None => assert!(!errors.contains("Mission check"), "{errors}"),
        }
    }
    b.client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_refusal_clears_and_the_preset_title_shows_until_edited() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    // A link whose preset is missing leaves "Link not applied …" on the page; a bad paste is
    // refused in the dialog itself, where the instructor is looking (not a second page message).
    open(c, &format!("{base}?autoplay=0&preset_url=missing.json")).await;
    wait_for(c, "kvlab.errors().join(' ').includes('404')", "the missing file").await;
    load_in_dialog(c, r#"{"schema": "kvlab/preset@1", "kv_memory_gib": "lots"}"#).await;
    wait_for(c, "document.getElementById('load-error').textContent.includes('kv_memory_gib')", "the refusal").await;
    assert!(!js(c, "return kvlab.errors().join(' ')").await.as_str().unwrap().contains("kv_memory_gib"));
    c.find(Locator::Id("load-cancel")).await.unwrap().click().await.unwrap();

    // A later load that works clears both, and its title is shown in the header and the picker.
    let title = "Ten GiB, paged, for the seminar";
    let preset = json!({ "schema": "kvlab/preset@1", "title": title, "kv_memory_gib": 10,
        "allocator": { "kind": "paged", "block_size": 32 } });
    load_in_dialog(c, &preset.to_string()).await;
    assert!(!shown(c, "load-dialog").await);
    assert_eq!(js(c, "return kvlab.errors()").await, json!([]), "stale messages stay");
    assert_eq!(text(c, "#preset-title").await, title);
    assert!(shown(c, "preset-title").await);
    let picker =
        "const s = document.getElementById('preset-select'); return [s.value, s.options[s.selectedIndex].text]";
    assert_eq!(js(c, picker).await, json!(["", title]));

    // Edited, it is custom: the picker says so, and the header names the setup now on screen
    // (its tooltip says what it was loaded as).
    js(c, "kvlab.setField('allocator.block_size', '16'); return null").await;
    assert_eq!(js(c, picker).await, json!(["", "custom (edited)"]));
    let header = text(c, "#preset-title").await;
    assert!(header.starts_with("Edited: Paged · 16-token blocks · 10 GiB KV · "), "{header}");
    let tooltip = js(c, "return document.getElementById('preset-title').title").await;
    assert!(tooltip.as_str().unwrap().contains(title), "{tooltip}");

    // A shipped preset: its id in the picker, its title in the header.
    c.find(Locator::Css("#preset-select option[value='paged-default']")).await.unwrap().click().await.unwrap();
    let shipped = js(c, "return kvlab.state()").await["preset"]["title"].as_str().unwrap().to_string();
    assert_eq!(js(c, picker).await[0], "paged-default");
    assert_eq!(text(c, "#preset-title").await, shipped);
    b.client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_missions_played_are_on_the_hub_with_their_stars() {
    let base = serve(require_dist()).await;
    let b = browser(1200, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0")).await;
    js(c, "localStorage.clear(); return null").await;
    open_hub(c, &base).await;
    assert!(!shown(c, "hub-custom").await, "no custom mission played yet");

    // Play the example to three stars.
    open(c, &format!("{base}?autoplay=0")).await;
    js(c, &format!("kvlab.load({}); return null", serde_json::to_string(&example()).unwrap())).await;
    common_e2e::wait_full(c).await;
    js(c, "kvlab.setField('allocator.reserve', '\"prompt_plus_max_tokens\"'); kvlab.runToEnd(); return null").await;
    wait_for(c, "kvlab.missionScore().final === true", "the end of the run").await;
    open_hub(c, &base).await;
    let card = "#hub-custom-list li[data-id='example-reserve-less']";
    assert!(shown(c, "hub-custom").await);
    assert_eq!(js(c, &format!("return document.querySelector(\"{card}\").dataset.stars")).await, "3");
    assert!(text(c, card).await.contains("Reserve for the request, not for the model"));
    assert!(text(c, card).await.contains("★★★"));
    assert!(text(c, "#hub-total").await.starts_with("0 of"), "custom stars are not in the shipped total");

    // The stored list is bounded and read defensively: corrupt it, and the hub still lists the
    // mission (by id, from the star record) with its stars.
    let stored = js(c, "return localStorage.getItem('kvlab.played.v1')").await;
    let list: Value = serde_json::from_str(stored.as_str().unwrap()).unwrap();
    assert_eq!(list["missions"][0]["id"], "example-reserve-less");
    for junk in ["{not json", "{\"schema\": \"kvlab/played@1\", \"missions\": [{\"id\": 7}]}"] {
        js(c, &format!("localStorage.setItem('kvlab.played.v1', {}); return null", json!(junk))).await;
        open_hub(c, &base).await;
        assert_eq!(js(c, &format!("return document.querySelector(\"{card}\").dataset.stars")).await, "3");
        assert!(text(c, card).await.contains("example-reserve-less"));
    }
    b.client.clone().close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embed_button_copies_a_snippet_that_reproduces_the_lab() {
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?autoplay=0&preset=paged-default")).await;
    js(c, "kvlab.setField('allocator.block_size', '32'); kvlab.runTo(12); return null").await;
    assert!(shown(c, "embed-btn").await);
    let snippet = js(c, "return kvlab.embedSnippet()").await.as_str().unwrap().to_string();
    assert!(snippet.starts_with("<iframe src=\"") && snippet.ends_with("</iframe>"), "{snippet}");
    let src = snippet.split('"').nth(1).unwrap().replace("&amp;", "&");
    assert!(src.contains("embed=1") && src.contains("#lab="), "{src}");
    let state = js(c, "return kvlab.state()").await;
    open(c, &src).await;
    assert_eq!(js(c, "return document.documentElement.classList.contains('embed')").await, true);
    assert_eq!(js(c, "return kvlab.state()").await, state, "the snippet's lab is the lab that was shown");
    b.client.clone().close().await.unwrap();
}

/// An operator's config.json, pasted into the Load dialog, replaces the model on screen: the run
/// uses its KV shape and the header names it; one too big for the GPU is refused in the dialog
/// with its text kept; a broken one names its missing key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_json_in_the_load_dialog_replaces_the_model() {
    let dir = repo_path("../shared/validation/model-configs");
    let Ok(qwen) = std::fs::read_to_string(dir.join("Qwen__Qwen2.5-7B-Instruct.config.json")) else {
        eprintln!("skipped: ../shared/validation/model-configs is not here");
        return;
    };
    let big = std::fs::read_to_string(dir.join("meta-llama__Llama-3.1-70B-Instruct.config.json")).unwrap();
    let base = serve(require_dist()).await;
    let b = browser(1400, 900).await;
    let c = &b.client;
    open(c, &format!("{base}?preset=paged-default&autoplay=0")).await;
    load_in_dialog(c, &qwen).await;
    assert!(!shown(c, "load-dialog").await, "the dialog closes");
    assert_eq!(js(c, "return kvlab.state().preset.model.hf_config.architectures[0]").await, "Qwen2ForCausalLM");
    assert_eq!(js(c, "return kvlab.report().kv_bytes_per_token").await, json!(28 * 4 * 128 * 2 * 2));
    let title = text(c, "#preset-title").await;
    assert!(title.contains("Qwen2ForCausalLM"), "the header names the model: {title}");
    // Llama-3.1-70B's weights do not fit one H100 beside the KV: refused in the dialog, text kept.
    load_in_dialog(c, &big).await;
    assert!(shown(c, "load-error").await);
    let error = text(c, "#load-error").await;
    assert!(error.contains("tensor_parallel_size"), "{error}");
    assert_eq!(js(c, "return document.getElementById('load-text').value").await, json!(big), "nothing typed is lost");
    let mut broken: Value = serde_json::from_str(&qwen).unwrap();
    broken.as_object_mut().unwrap().remove("num_hidden_layers");
    load_in_dialog(c, &broken.to_string()).await;
    let error = text(c, "#load-error").await;
    assert!(error.contains("num_hidden_layers"), "{error}");
    save_screenshot(c, "load-dialog-config-json-error.png").await;
    assert_eq!(
        js(c, "return kvlab.state().preset.model.hf_config.architectures[0]").await,
        "Qwen2ForCausalLM",
        "the lab keeps the last good model"
    );
    b.close().await;
}
