//! Missions and stars: what a mission does with a learner's setup (knob patches, runs, star
//! scoring), the shipped missions, and the star record with its storage seam. The file formats
//! are `formats::mission`; the page's storage is `web::storage`.
//!
//! - [`check`]: the mission check (broken setup 0 stars, fix 3) of `kvlab check` and the Load dialog
//! - [`last_setup`]: the setup a learner last chose in each mission, for the hub's "Continue"
//! - [`mission`]: a validated `Mission`, patches, scoring
//! - [`played`]: the custom missions a learner played, named for the hub (bounded, read defensively)
//! - [`shipped`]: the shipped missions and their index, parsed
//! - [`stars`]: the versioned star record, the `StarStore` trait with a memory store, `StarKeeper`

pub mod check;
pub mod last_setup;
pub mod mission;
pub mod played;
pub mod shipped;
pub mod stars;
