//! Missions and stars: what a mission does with a learner's setup (knob patches, runs, star
//! scoring), the shipped missions, and the star record with its storage seam. The file formats
//! are `formats::mission`; the page's storage is `web::storage`.
//!
//! - [`mission`]: a validated `Mission`, patches, scoring
//! - [`shipped`]: the shipped missions and their index, parsed
//! - [`stars`]: the versioned star record, the `StarStore` trait with a memory store, `StarKeeper`

pub mod mission;
pub mod shipped;
pub mod stars;
