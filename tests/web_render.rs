//! The web layer's drawing in a real browser: a known memory-map snapshot becomes the expected
//! pixels on a canvas (through one ImageData), a simulated map is never blank, the charts draw,
//! and the inspector describes cells.
#![cfg(target_arch = "wasm32")]

use kvlab::engine::{MapCell, MemoryMap, Simulation};
use kvlab::formats::preset::parse_preset;
use kvlab::render::{owner_colour, palette, MapLayout, RenderOptions, Rgba};
use kvlab::session::presets;
use kvlab::web::chart::{draw_kv, draw_queues, ChartRun, LIGHT};
use kvlab::web::map::{describe_cell, paint_map};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

wasm_bindgen_test_configure!(run_in_browser);

fn canvas(css_w: u32, css_h: u32) -> HtmlCanvasElement {
    let doc = web_sys::window().unwrap().document().unwrap();
    let c: HtmlCanvasElement = doc.create_element("canvas").unwrap().dyn_into().unwrap();
    c.style().set_property("width", &format!("{css_w}px")).unwrap();
    c.style().set_property("height", &format!("{css_h}px")).unwrap();
    doc.body().unwrap().append_child(&c).unwrap();
    c
}

fn ctx(c: &HtmlCanvasElement) -> CanvasRenderingContext2d {
    c.get_context("2d").unwrap().unwrap().dyn_into().unwrap()
}

fn pixel(c: &HtmlCanvasElement, x: u32, y: u32) -> Rgba {
    let d = ctx(c).get_image_data(f64::from(x), f64::from(y), 1.0, 1.0).unwrap().data();
    [d[0], d[1], d[2], d[3]]
}

fn cell(owner: u32, live: u16, flags: u8) -> MapCell {
    MapCell { owner, live_tokens: live, flags, group: 0 }
}

#[wasm_bindgen_test]
fn known_snapshot_gives_expected_pixels() {
    let cells = [
        cell(0, 0, 0),                                   // free
        cell(1, 0, MapCell::SLAB | MapCell::SLAB_START), // slab start, empty
        cell(1, 16, MapCell::SLAB),                      // full
        cell(2, 8, 0),                                   // half full
        cell(3, 16, MapCell::SHARED),                    // shared block
        cell(4, 9, MapCell::COPIED),                     // copy-on-write copy
        cell(0, 0, MapCell::CACHED),                     // free, cached prefix
    ];
    let layout = MapLayout::with_pitch(cells.len(), 40, 10); // 4 columns, 2 rows, 9-px cells
    let c = canvas(40, 20);
    let mut buf = Vec::new();
    paint_map(&c, &cells, 16, &layout, &RenderOptions::default(), &mut buf).unwrap();
    assert_eq!((c.width(), c.height()), (40, 20));
    assert_eq!(pixel(&c, 4, 4), palette::FREE, "free cell");
    assert_eq!(pixel(&c, 9, 4), palette::BACKGROUND, "gap between cells");
    assert_eq!(pixel(&c, 10, 4), palette::INK, "slab-start marker");
    assert_eq!(pixel(&c, 15, 2), palette::EMPTY, "allocated but empty");
    assert_eq!(pixel(&c, 24, 4), owner_colour(0), "full cell in the owner's colour");
    assert_eq!(pixel(&c, 31, 2), palette::EMPTY, "top of a half-full cell");
    assert_eq!(pixel(&c, 31, 7), owner_colour(1), "bottom of a half-full cell");
    assert_eq!(pixel(&c, 4, 14), palette::INK, "dot of a shared block");
    assert_eq!(pixel(&c, 1, 17), owner_colour(2), "shared block's fill");
    assert_eq!(pixel(&c, 14, 14), palette::PAPER, "dot of a copied block");
    assert_eq!(pixel(&c, 24, 14), palette::CACHED, "dot of a cached free block");
    assert_eq!(pixel(&c, 21, 11), palette::FREE, "cached block is free around its dot");
    assert_eq!(pixel(&c, 35, 15), palette::BACKGROUND, "past the last cell");
}

#[wasm_bindgen_test]
fn highlight_and_cursor_show_on_the_canvas() {
    let cells = [cell(1, 16, 0), cell(2, 16, 0)];
    let layout = MapLayout::with_pitch(2, 20, 10);
    let c = canvas(20, 10);
    let mut buf = Vec::new();
    let opts = RenderOptions { highlight_owner: Some(2), cursor: Some(0), dark: false };
    paint_map(&c, &cells, 16, &layout, &opts, &mut buf).unwrap();
    assert_eq!(pixel(&c, 14, 4), owner_colour(1), "highlighted owner at full strength");
    assert_eq!(pixel(&c, 18, 4), palette::INK, "highlighted owner framed");
    let faded = pixel(&c, 4, 4);
    assert_ne!(faded, owner_colour(0), "other owners fade");
    assert!(faded.iter().take(3).all(|&v| v > 0xE0), "faded cells are pale: {faded:?}");
    assert_eq!(pixel(&c, 0, 0), palette::FOCUS, "the cursor's outer ring");
    assert_eq!(pixel(&c, 1, 4), palette::FOCUS, "the cursor's ring is two pixels wide");
    assert_eq!(pixel(&c, 2, 4), palette::PAPER, "a white line inside the cursor's ring");
}

fn non_background_pixels(c: &HtmlCanvasElement, background: Rgba) -> usize {
    let d = ctx(c).get_image_data(0.0, 0.0, f64::from(c.width()), f64::from(c.height())).unwrap().data();
    d.chunks_exact(4).filter(|p| *p != background.as_slice()).count()
}

#[wasm_bindgen_test]
fn simulated_maps_are_not_blank_and_match_the_engine() {
    for id in ["contiguous-default", "paged-default"] {
        let mut sim = Simulation::new(parse_preset(presets::json(id).unwrap()).unwrap()).unwrap();
        sim.run_until(20_000_000);
        let map: MemoryMap = sim.memory_map();
        let layout = MapLayout::fit(map.cells.len(), 600, 400);
        let c = canvas(600, 400);
        let mut buf = Vec::new();
        paint_map(&c, &map.cells, map.cell_tokens, &layout, &RenderOptions::default(), &mut buf).unwrap();
        let drawn = non_background_pixels(&c, palette::BACKGROUND);
        assert!(drawn > 10_000, "{id}: the map is (nearly) blank: {drawn} pixels drawn");
        // The first allocated cell is drawn in its owner's colour or as empty.
        let i = map.cells.iter().position(|c| c.owner != 0).expect("something is allocated at 20 s");
        let (x, y) = layout.origin(i);
        let p = pixel(&c, x + layout.cell - 1, y + layout.cell - 1);
        let owner = map.cells[i].request().unwrap();
        assert!(
            p == owner_colour(owner) || p == palette::EMPTY || p == palette::EMPTY_HATCH,
            "{id}: cell {i} is {p:?}"
        );
    }
}

#[wasm_bindgen_test]
fn charts_draw_series_and_return_their_plot_box() {
    let mut sim = Simulation::new(parse_preset(presets::json("contiguous-default").unwrap()).unwrap()).unwrap();
    sim.run_until(10_000_000);
    let runs = [ChartRun { series: sim.series(), capacity_tokens: sim.kv().capacity_tokens(), dashed: false }];
    let kv = canvas(600, 200);
    let b = draw_kv(&kv, &runs, 60.0, 10.0, &LIGHT).unwrap();
    assert!(b.x0 > 0.0 && b.x1 > b.x0 && b.x1 <= 600.0, "plot box {b:?}");
    let t = b.time_at((b.x0 + b.x1) / 2.0).unwrap();
    assert!((t - 30.0).abs() < 0.01, "the middle of the plot is 30 s, got {t}");
    assert!(non_background_pixels(&kv, [255, 255, 255, 255]) > 2_000, "the KV chart is blank");
    let q = canvas(600, 120);
    draw_queues(&q, &runs, 60.0, 10.0, &["swapped".to_string()], &LIGHT).unwrap();
    assert!(non_background_pixels(&q, [255, 255, 255, 255]) > 500, "the queue chart is blank");
}

#[wasm_bindgen_test]
fn inspector_describes_owner_slab_and_free_cells() {
    let mut sim = Simulation::new(parse_preset(presets::json("contiguous-default").unwrap()).unwrap()).unwrap();
    sim.run_until(5_000_000);
    let map = sim.memory_map();
    let i = map.cells.iter().position(|c| c.owner != 0).unwrap();
    let view = sim.request_view(map.cells[i].request().unwrap());
    // A class name with markup in it (presets are anyone's files) stays text.
    let nodes = describe_cell(i, &map, view.as_ref(), &["<b>chat</b>".to_string()], false);
    let elements: Vec<_> = nodes.into_iter().map(|n| n.build()).collect();
    let text: Vec<String> = elements.iter().map(|e| e.text_content().unwrap_or_default()).collect();
    let text = text.join("\n");
    assert!(text.contains("Request #"), "{text}");
    assert!(text.contains("Slab at slots"), "{text}");
    assert!(text.contains("class <b>chat</b>"), "{text}");
    assert!(elements.iter().all(|e| e.query_selector("b").unwrap().is_none()), "markup was parsed");
    let free = map.cells.iter().position(|c| c.owner == 0).unwrap();
    let text: Vec<String> =
        describe_cell(free, &map, None, &[], false).into_iter().map(|n| n.build().text_content().unwrap()).collect();
    assert!(text.join(" ").contains("free"), "{text:?}");
}

/// At 1× device pixel ratio the "allocated, empty" hatch shows in small cells: a 6-px pitch
/// (5-px cells) carries hatch pixels that stand apart from the empty red.
#[wasm_bindgen_test]
fn the_empty_hatch_is_drawn_in_small_cells_at_one_device_pixel() {
    let cells = [cell(1, 0, MapCell::SLAB), cell(1, 0, MapCell::SLAB)];
    let layout = MapLayout::with_pitch(cells.len(), 12, 6);
    let c = canvas(12, 6);
    let mut buf = Vec::new();
    paint_map(&c, &cells, 16, &layout, &RenderOptions::default(), &mut buf).unwrap();
    let hatch =
        (0..5).flat_map(|y| (0..11).map(move |x| (x, y))).filter(|&(x, y)| pixel(&c, x, y) == palette::EMPTY_HATCH);
    assert!(hatch.count() >= 6, "no hatch in 5-px cells");
    let luma = |p: Rgba| 0.2126 * f64::from(p[0]) + 0.7152 * f64::from(p[1]) + 0.0722 * f64::from(p[2]);
    assert!(luma(palette::EMPTY_HATCH) > luma(palette::EMPTY) + 30.0, "the hatch barely differs from the red");
}

/// An embed's map fills its whole box: the canvas is the box's size, and every cell is drawn.
#[wasm_bindgen_test]
fn a_filled_map_covers_its_box() {
    let mut sim = Simulation::new(parse_preset(presets::json("paged-default").unwrap()).unwrap()).unwrap();
    sim.run_until(20_000_000);
    let map = sim.memory_map();
    let layout = MapLayout::fill(map.cells.len(), 583, 197);
    let c = canvas(583, 197);
    let mut buf = Vec::new();
    paint_map(&c, &map.cells, map.cell_tokens, &layout, &RenderOptions::default(), &mut buf).unwrap();
    assert_eq!((c.width(), c.height()), (583, 197));
    let last = map.cells.len() - 1;
    let (x, y, w, h) = layout.rect(last);
    assert!(x + w <= 583 && y + h <= 197, "the last cell is outside the box");
    assert!(y + h + 8 >= 197 || layout.rows == 1, "the grid leaves the bottom of its box empty");
    assert_ne!(pixel(&c, x, y), palette::BACKGROUND, "the last cell is not drawn");
}
