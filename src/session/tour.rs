//! The newcomer's tour: four short steps, each pointing at one part of the lab (the memory map,
//! its dark red, the chart, Compare), that the reader steps through or skips. The steps and
//! where the reader is in them live here; the page (`web::onboarding`) draws the popover beside
//! each step's element and remembers in localStorage that the tour was taken or skipped.

/// The tour shows the run at this time (seconds) when it starts earlier: memory in use, and the
/// dark red its second step explains on screen.
pub const SHOWN_AT_S: f64 = 20.0;

/// One step of the tour: the element it points at (an id of the page) and what it says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TourStep {
    /// The id of the element the step points at.
    pub target: &'static str,
    pub title: &'static str,
    pub text: &'static str,
}

/// The tour, in order.
pub const STEPS: [TourStep; 4] = [
    TourStep {
        target: "map-panel-0",
        title: "The memory map",
        text: "One cell per slice of the GPU's KV cache memory, coloured by the request that owns it and filled as far as its tokens reach.",
    },
    TourStep {
        target: "map-legend",
        title: "Dark red is waste",
        text: "Dark red cells are memory a request holds but has not filled. A contiguous allocator reserves each request's whole maximum length the moment it starts.",
    },
    TourStep {
        target: "chart-kv",
        title: "Allocated against used",
        text: "The red line is memory handed out, the blue line memory holding tokens; the gap between them is the waste, second by second. Click the chart to move the time.",
    },
    TourStep {
        target: "compare-label",
        title: "Compare",
        text: "Tick Compare to run vLLM's paged allocator beside this one on the same traffic, then press Play and watch the gap close.",
    },
];

/// Where the reader is in the tour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tour {
    /// On step `i` (0-based) of [`STEPS`].
    At(usize),
    /// Stepped past the last step.
    Finished,
    /// Left before the end.
    Skipped,
}

impl Tour {
    /// The tour at its first step.
    pub fn start() -> Tour {
        Tour::At(0)
    }

    /// The step shown, if the tour is still going.
    pub fn step(self) -> Option<&'static TourStep> {
        match self {
            Tour::At(i) => STEPS.get(i),
            Tour::Finished | Tour::Skipped => None,
        }
    }

    /// "Step 2 of 4".
    pub fn counter(self) -> Option<String> {
        match self {
            Tour::At(i) => Some(format!("Step {} of {}", i + 1, STEPS.len())),
            Tour::Finished | Tour::Skipped => None,
        }
    }

    /// Whether the shown step is the last one (its button reads "Done").
    pub fn on_last_step(self) -> bool {
        self == Tour::At(STEPS.len() - 1)
    }

    pub fn next(self) -> Tour {
        match self {
            Tour::At(i) if i + 1 < STEPS.len() => Tour::At(i + 1),
            Tour::At(_) => Tour::Finished,
            done => done,
        }
    }

    pub fn back(self) -> Tour {
        match self {
            Tour::At(i) => Tour::At(i.saturating_sub(1)),
            done => done,
        }
    }

    pub fn skip(self) -> Tour {
        match self {
            Tour::At(_) => Tour::Skipped,
            done => done,
        }
    }

    /// What localStorage keeps once the tour is over ("finished" or "skipped"), so it is not
    /// offered again.
    pub fn remembered_as(self) -> Option<&'static str> {
        match self {
            Tour::At(_) => None,
            Tour::Finished => Some("finished"),
            Tour::Skipped => Some("skipped"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tour_steps_through_its_four_steps_and_ends_finished_or_skipped() {
        let mut t = Tour::start();
        let mut seen = Vec::new();
        while let Some(step) = t.step() {
            seen.push((t.counter().unwrap(), step.target, t.on_last_step()));
            t = t.next();
        }
        assert_eq!(
            seen,
            [
                ("Step 1 of 4".to_string(), "map-panel-0", false),
                ("Step 2 of 4".to_string(), "map-legend", false),
                ("Step 3 of 4".to_string(), "chart-kv", false),
                ("Step 4 of 4".to_string(), "compare-label", true),
            ]
        );
        assert_eq!(t, Tour::Finished);
        assert_eq!((t.next(), t.skip(), t.back()), (Tour::Finished, Tour::Finished, Tour::Finished));
        assert_eq!(t.remembered_as(), Some("finished"));
        assert_eq!(Tour::start().back(), Tour::At(0));
        assert_eq!(Tour::start().next().next().back(), Tour::At(1));
        let skipped = Tour::start().next().skip();
        assert_eq!((skipped.step(), skipped.remembered_as()), (None, Some("skipped")));
        assert_eq!(Tour::At(2).remembered_as(), None);
    }
}
