//! The page's colour theme as the canvases need it. The stylesheet decides (`?theme=light|dark`,
//! set as `data-theme` by www/early.js, or `prefers-color-scheme` when the link says `auto` or
//! nothing) and publishes the answer as the custom property `--theme`; this module reads it, so
//! the map (`render::MapTheme`) and the charts (`chart::ChartTheme`) always agree with the page.

use super::dom;

/// Whether the page is dark now (`--theme: dark` on the root element).
pub fn is_dark() -> bool {
    let root = dom::document().document_element();
    let style = root.and_then(|r| dom::window().get_computed_style(&r).ok().flatten());
    style.and_then(|s| s.get_property_value("--theme").ok()).is_some_and(|v| v.trim() == "dark")
}
