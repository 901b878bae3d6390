//! The map's colours: the colour-blind-safe palette (Paul Tol's "light" scheme for owners), the
//! theme-dependent colours (`MapTheme`, light and dark), each request's stable colour, and the
//! integer colour mixing the renderer uses.

/// One pixel, in the byte order of a canvas `ImageData` (R, G, B, A).
pub type Rgba = [u8; 4];

/// Colours of the map. Owners use Paul Tol's "light" qualitative scheme (readable with the
/// common colour-vision deficiencies); "allocated but empty" is a dark red that differs from
/// every owner colour by lightness as well as hue, and is hatched when cells are large enough.
pub mod palette {
    use crate::render::colours::Rgba;

    /// Gaps between cells and the space right of the last column.
    pub const BACKGROUND: Rgba = [0xFF, 0xFF, 0xFF, 0xFF];
    /// A free cell.
    pub const FREE: Rgba = [0xE3, 0xE6, 0xEB, 0xFF];
    /// Allocated (reserved or held) but holding no token.
    pub const EMPTY: Rgba = [0x8C, 0x1C, 0x2E, 0xFF];
    /// The hatch lines drawn over `EMPTY` in cells of 5 px and more (contrast 2.2 : 1 with
    /// `EMPTY`, so one-pixel lines show at 1× device pixel ratio).
    pub const EMPTY_HATCH: Rgba = [0xC4, 0x5A, 0x69, 0xFF];
    /// Slab-start markers, shared-block dots, the keyboard cursor.
    pub const INK: Rgba = [0x1E, 0x23, 0x2E, 0xFF];
    /// Copy-on-write dots.
    pub const PAPER: Rgba = [0xFF, 0xFF, 0xFF, 0xFF];
    /// Free blocks that still hold a cached prefix.
    pub const CACHED: Rgba = [0x2B, 0x7F, 0x77, 0xFF];
    /// Free blocks last freed behind a sliding window or attention chunk (hybrid KV cache).
    pub const BEHIND_WINDOW: Rgba = [0xB8, 0x86, 0x0B, 0xFF];
    /// Owner colours, ordered so that consecutive request ids differ strongly: Paul Tol's
    /// "light" scheme without its pink and orange, which read as the reds of "allocated but
    /// empty" and "partly filled", replaced by a lavender and a steel teal (no owner colour has
    /// a red hue: `tests` check every one against the waste colours).
    pub const OWNERS: [Rgba; 8] = [
        [0x77, 0xAA, 0xDD, 0xFF], // light blue
        [0xEE, 0xDD, 0x88, 0xFF], // light yellow
        [0x44, 0xBB, 0x99, 0xFF], // mint
        [0xBB, 0xAA, 0xEE, 0xFF], // lavender
        [0x99, 0xDD, 0xFF, 0xFF], // light cyan
        [0x66, 0xAA, 0xBB, 0xFF], // steel teal
        [0xBB, 0xCC, 0x33, 0xFF], // pear
        [0xAA, 0xAA, 0x00, 0xFF], // olive
    ];
    /// The keyboard cursor: a two-pixel focus-blue ring with a white inner line, unlike the
    /// one-pixel ink frame of a highlighted request's cells.
    pub const FOCUS: Rgba = [0x1F, 0x6F, 0xEB, 0xFF];

    /// CSS `#rrggbb` of a colour, for the legend and the chart.
    pub fn css(c: Rgba) -> String {
        format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
    }
}

/// The colours of the map that depend on the page's theme: what lies around the cells, free
/// cells, "allocated but empty" and the keyboard cursor. Request colours and the markers are the
/// same in both themes, so a colour means the same request and the legend stays true.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapTheme {
    pub background: Rgba,
    pub free: Rgba,
    pub empty: Rgba,
    pub empty_hatch: Rgba,
    pub cursor: Rgba,
}

impl MapTheme {
    pub const LIGHT: MapTheme = MapTheme {
        background: palette::BACKGROUND,
        free: palette::FREE,
        empty: palette::EMPTY,
        empty_hatch: palette::EMPTY_HATCH,
        cursor: palette::FOCUS,
    };
    /// On a dark page: a dark background and free cells a step lighter, so free memory still
    /// reads as cells; "allocated but empty" stays a dark red, lifted just enough to stand off
    /// the background (and still darker than every request colour); a lighter focus-blue cursor.
    pub const DARK: MapTheme = MapTheme {
        background: [0x17, 0x1C, 0x23, 0xFF],
        free: [0x2E, 0x35, 0x40, 0xFF],
        empty: [0x92, 0x1F, 0x33, 0xFF],
        empty_hatch: [0xC8, 0x58, 0x6A, 0xFF],
        cursor: [0x58, 0xA6, 0xFF, 0xFF],
    };

    pub fn of(dark: bool) -> MapTheme {
        if dark {
            MapTheme::DARK
        } else {
            MapTheme::LIGHT
        }
    }
}

/// The stable colour of a request: one of eight hues, in two tones (ids 8–15 are a shade
/// darker than ids 0–7, and so on), so neighbours in memory rarely look alike.
pub fn owner_colour(request: u32) -> Rgba {
    OWNER_TONES[(request % 16) as usize]
}

const OWNER_TONES: [Rgba; 16] = {
    let mut t = [[0u8; 4]; 16];
    let mut i = 0;
    while i < 16 {
        let base = palette::OWNERS[i % 8];
        t[i] = if i < 8 { base } else { mix_w(base, [0x30, 0x30, 0x40, 0xFF], 56) };
        i += 1;
    }
    t
};

/// Linear mix in integer arithmetic: weight `w` of 256 goes to `b` (0 gives `a`, 256 gives `b`).
pub const fn mix_w(a: Rgba, b: Rgba, w: u32) -> Rgba {
    let w = if w > 256 { 256 } else { w };
    [mix_channel(a[0], b[0], w), mix_channel(a[1], b[1], w), mix_channel(a[2], b[2], w), 0xFF]
}

const fn mix_channel(x: u8, y: u8, w: u32) -> u8 {
    ((x as u32 * (256 - w) + y as u32 * w + 128) >> 8) as u8
}

/// Linear mix: `t = 0` gives `a`, `t = 1` gives `b`.
pub fn mix(a: Rgba, b: Rgba, t: f32) -> Rgba {
    mix_w(a, b, (t.clamp(0.0, 1.0) * 256.0 + 0.5) as u32)
}
