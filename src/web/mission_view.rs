//! The mission panel of the lab (mission mode): the story, the task, which knobs may change,
//! the goals with their thresholds, live values and explanations (closed until their star is
//! earned, or opened by the learner), the goals' verdicts and the stars once the run reaches its
//! end (neutral before), the best kept in this browser, hints revealed on demand, and the
//! documented solution. Every mission string is set as text, never as HTML.

use web_sys::{Element, HtmlButtonElement, HtmlElement};

use crate::formats::mission::{Comparison, MAX_STARS};
use crate::missions::mission::{GoalResult, Mission, BACKEND_BLOCK_SIZE_METRIC};

use super::dom;
use super::storage::Stars;
use crate::session::lab::{Lab, MissionStatus};

pub struct MissionView {
    /// The stars kept in this browser (read here, written by `App` when a run ends).
    stars: Stars,
    root: HtmlElement,
    /// (mission id, custom) the static parts were built for.
    built: Option<(String, bool)>,
    goals: Vec<GoalItem>,
    hints_shown: Option<u32>,
    /// The simulated time of the last score shown.
    pub last_key: Option<u64>,
    /// Whether the last score shown was final (the explanations open when it becomes so).
    was_final: bool,
}

struct GoalItem {
    li: Element,
    value: Element,
    mark: Element,
    why: Element,
    /// The goal's star tier.
    stars: u8,
    /// "Why this goal" was opened by the panel once (its star was earned); from then on only
    /// the learner opens and closes it.
    opened: bool,
}

/// A metric's value as the learner reads it: shares in %, latencies in ms, memory in GiB.
pub fn format_metric(metric: &str, v: f64) -> String {
    if metric == BACKEND_BLOCK_SIZE_METRIC {
        return if v == 0.0 { "a FlashAttention size" } else { "not a FlashAttention size" }.to_string();
    }
    let shares = [
        "kv.utilization_mean",
        "kv.allocated_fraction_mean",
        "kv.live_fraction_mean",
        "prefix_cache_hit_rate",
        "paged_overhead",
    ];
    if shares.contains(&metric) {
        let p = 100.0 * v;
        return if (p - p.round()).abs() < 1e-9 { format!("{p:.0}%") } else { format!("{p:.1}%") };
    }
    let number = if v.fract() == 0.0 && v.abs() < 1e15 {
        crate::engine::plan::group_thousands(v.abs() as u64)
    } else if v.abs() >= 100.0 {
        crate::engine::plan::group_thousands(v.abs().round() as u64)
    } else {
        format!("{:.2}", v.abs()).trim_end_matches('0').trim_end_matches('.').to_string()
    };
    let number = if v < 0.0 { format!("-{number}") } else { number };
    if metric.starts_with("latency_ms.") {
        format!("{number} ms")
    } else if metric == "config.kv_memory_gib" || metric == "config.scheduler.swap_space_gib" {
        format!("{number} GiB")
    } else {
        number
    }
}

pub fn comparison_text(c: Comparison) -> &'static str {
    match c {
        Comparison::AtLeast => "≥",
        Comparison::AtMost => "≤",
        Comparison::Above => ">",
        Comparison::Below => "<",
        Comparison::Equal => "=",
    }
}

/// "kv.utilization_mean ≥ 96%".
pub fn goal_target(g: &GoalResult) -> String {
    if g.metric == BACKEND_BLOCK_SIZE_METRIC {
        return "allocator.block_size a multiple of 16".to_string();
    }
    format!("{} {} {}", g.metric, comparison_text(g.comparison), format_metric(&g.metric, g.value))
}

fn button(id: &str) -> Option<HtmlButtonElement> {
    dom::by_id(id)
}

impl MissionView {
    /// The panel, when the page has one.
    pub fn new(stars: Stars) -> Option<MissionView> {
        Some(MissionView {
            stars,
            root: dom::by_id("mission")?,
            built: None,
            goals: Vec::new(),
            hints_shown: None,
            last_key: None,
            was_final: false,
        })
    }

    /// Forces the score to be recomputed on the next frame.
    pub fn invalidate(&mut self) {
        self.last_key = None;
    }

    pub fn render(&mut self, lab: &Lab, status: Option<&MissionStatus>) {
        let (Some(m), Some(r)) = (lab.mission.as_ref(), lab.state.mission.as_ref()) else {
            if self.built.take().is_some() || !self.root.hidden() {
                dom::set_hidden(&self.root, true);
                self.hints_shown = None;
            }
            return;
        };
        let key = (r.id.clone(), r.custom.is_some());
        if self.built.as_ref() != Some(&key) {
            self.build(m, r.custom.is_some());
            self.built = Some(key);
            self.hints_shown = None;
        }
        dom::set_hidden(&self.root, false);
        if self.hints_shown != Some(r.hints) {
            self.render_hints(m, r.hints);
            self.hints_shown = Some(r.hints);
        }
        if let Some(sol) = dom::by_id::<HtmlElement>("mission-solution") {
            dom::set_hidden(&sol, !r.solution);
        }
        if let Some(status) = status {
            self.render_score(lab, m, status, r.solution);
        }
        dom::toggle_class(
            &self.root,
            "final",
            status.is_some_and(|s| s.at_end) || (status.is_none() && self.was_final),
        );
    }

    fn build(&mut self, m: &Mission, custom: bool) {
        let text = |id: &str, t: &str| {
            if let Some(e) = dom::by_id::<Element>(id) {
                dom::set_text(&e, t);
            }
        };
        text("mission-number", &format!("Mission {}{}", m.number(), if custom { " · custom" } else { "" }));
        text("mission-title", m.title());
        text("mission-story", m.story());
        text("mission-task", m.task());
        if let Some(knobs) = dom::by_id::<Element>("mission-knobs") {
            dom::clear(&knobs);
            for k in m.knobs() {
                dom::append(&knobs, super::knobs::chip(k));
            }
        }
        text("mission-fix", &serde_json::to_string(m.fix()).unwrap_or_default());
        self.goals.clear();
        let Some(list) = dom::by_id::<Element>("mission-goals") else { return };
        dom::clear(&list);
        // Every goal that scores has its card (`Mission::scoring_goals`), in the order the
        // score lists them (by star, then file order).
        let mut goals = m.scoring_goals();
        goals.sort_by_key(|g| g.stars);
        for g in &goals {
            let li = dom::append(&list, dom::el("li", "goal pending", None));
            let head = dom::append(&li, dom::el("div", "goal-head", None));
            let tier = dom::append(&head, dom::el("span", "goal-tier", None));
            dom::fill_stars(&tier, g.stars, g.stars);
            let mark = dom::append(&head, dom::el("span", "goal-mark", Some("…")));
            dom::append(&li, dom::el("p", "goal-label", Some(&g.label)));
            let target = GoalResult {
                label: String::new(),
                metric: g.metric.clone(),
                actual: None,
                comparison: g.comparison,
                value: g.value,
                stars: g.stars,
                met: false,
                explain: String::new(),
            };
            let line = dom::append(&li, dom::el("p", "goal-line", None));
            dom::append(&line, dom::el("span", "goal-target", Some(&format!("goal {}", goal_target(&target)))));
            let value = dom::append(&line, dom::el("span", "goal-value", None));
            let why = dom::append(&li, dom::el("details", "goal-why", None));
            dom::append(&why, dom::el("summary", "", Some("Why this goal")));
            dom::append(&why, dom::el("p", "goal-explain", Some(&g.explain)));
            let _ = li.set_attribute("data-metric", &g.metric);
            self.goals.push(GoalItem { li, value, mark, why, stars: g.stars, opened: false });
        }
        if let Some(h) = dom::by_id::<Element>("mission-hints") {
            dom::clear(&h);
        }
    }

    fn render_hints(&self, m: &Mission, shown: u32) {
        let Some(list) = dom::by_id::<Element>("mission-hints") else { return };
        dom::clear(&list);
        for h in m.hints().iter().take(shown as usize) {
            dom::append(&list, dom::el("li", "", Some(h)));
        }
        if let Some(l) = wasm_bindgen::JsCast::dyn_ref::<HtmlElement>(&list) {
            dom::set_hidden(l, shown == 0);
        }
        let total = m.hints().len() as u32;
        if let Some(b) = button("hint-btn") {
            let label = if total == 0 {
                "No hints".to_string()
            } else if shown >= total {
                "All hints shown".to_string()
            } else {
                format!("Show a hint ({} of {total})", shown + 1)
            };
            dom::set_text(&b, &label);
            b.set_disabled(shown >= total);
        }
    }

    fn render_score(&mut self, lab: &Lab, m: &Mission, status: &MissionStatus, solution: bool) {
        // A setup vLLM refused to start is scored at once: every goal missed, no value to show.
        let refusal = status.score.startup_refusal.as_deref();
        let started = lab.t_us > 0 || refusal.is_some();
        self.was_final = status.at_end;
        // A goal's explanation opens by itself once its star is earned: by this run at its end,
        // or earlier in this browser. Until then it stays closed unless the learner opens it.
        let best = self.stars.with(|k| k.stars(m.id()));
        let earned = if status.at_end { status.score.stars.max(best) } else { best };
        let mut ordered: Vec<&GoalResult> = status.score.goals.iter().collect();
        ordered.sort_by_key(|g| g.stars);
        for (item, g) in self.goals.iter_mut().zip(ordered) {
            // Neutral while the run goes on (the learner judges the value, the page does not
            // tell); met or missed when the run ends.
            let (state, mark) = match (started, status.at_end, g.met) {
                (false, ..) => ("pending", "not run yet"),
                (_, true, true) => ("met", "✓ met"),
                (_, true, false) => ("missed", "✗ missed"),
                (_, false, _) => ("pending", "scored at the end"),
            };
            let class = format!("goal {state}");
            if item.li.class_name() != class {
                item.li.set_class_name(&class);
            }
            let now = match g.actual {
                _ if !started => "—".to_string(),
                None if refusal.is_some() => "no run: the server did not start".to_string(),
                Some(v) => format!("{} {}", if status.at_end { "result" } else { "now" }, format_metric(&g.metric, v)),
                None => "no value (this setup has no such field)".to_string(),
            };
            dom::set_text(&item.value, &now);
            dom::set_text(&item.mark, mark);
            if !item.opened && earned >= item.stars {
                item.opened = true;
                let _ = item.why.set_attribute("open", "");
            }
        }
        if let Some(stars) = dom::by_id::<Element>("mission-stars") {
            dom::fill_stars(&stars, if status.at_end { status.score.stars } else { 0 }, MAX_STARS);
            dom::toggle_class(&stars, "final", status.at_end);
        }
        render_status_line(lab, status, solution, refusal, started);
        render_best(m, &self.stars);
    }
}

/// The line under the stars: vLLM's refusal, not run yet, running, the final score, or the
/// solution shown.
fn render_status_line(lab: &Lab, status: &MissionStatus, solution: bool, refusal: Option<&str>, started: bool) {
    let t = lab.t_us as f64 / 1e6;
    let d = lab.duration_us() as f64 / 1e6;
    let line = if let Some(words) = refusal {
        format!("The server did not start: {words}")
    } else if solution {
        "This is the documented fix, shown by the solution button: its stars are not saved. Set it up yourself to earn them.".to_string()
    } else if !started {
        format!("Not run yet: press Play, or End to jump to the end of the {d:.0} s.")
    } else if status.at_end {
        format!("Final score of this setup: {} of {MAX_STARS} stars.", status.score.stars)
    } else {
        format!("Running: {t:.1} s of {d:.0} s. The goals and the stars are scored when the run reaches its end.")
    };
    if let Some(s) = dom::by_id::<Element>("mission-status") {
        dom::set_text(&s, &line);
    }
}

/// The mission's best stars kept in this browser (or this visit, without storage).
fn render_best(m: &Mission, stars: &Stars) {
    if let Some(best) = dom::by_id::<Element>("mission-best") {
        let (stars, played, persistent) =
            stars.with(|k| (k.stars(m.id()), k.record().contains(m.id()), k.persistent()));
        let text = match (played, persistent) {
            (false, _) => "Best: not scored yet".to_string(),
            (true, true) => format!("Best in this browser: {}", star_text(stars)),
            (true, false) => format!("Best this visit: {}", star_text(stars)),
        };
        dom::set_text(&best, &text);
    }
}

/// "★★☆".
pub fn star_text(stars: u8) -> String {
    (0..MAX_STARS).map(|i| if i < stars { '★' } else { '☆' }).collect()
}
