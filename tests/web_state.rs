//! The lab state through the browser's own URL parser (percent-decoding, other parameters):
//! every shipped preset's link reads back as it was written. The rest of the lab state's tests
//! are native (tests/session_state.rs).
#![cfg(target_arch = "wasm32")]

use kvlab::session::presets;
use kvlab::session::url_state::LabState;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn every_shipped_preset_round_trips_through_the_browsers_url() {
    for id in presets::ids() {
        let mut s = LabState::new(presets::dto(id).unwrap());
        s.compare = true;
        s.t_s = Some(12.5);
        s.hidden = vec!["swapped".into()];
        s.switch_allocator(!s.is_paged());
        let url = web_sys::Url::new(&format!("http://127.0.0.1/?embed=1&preset={id}#{}", s.to_fragment())).unwrap();
        let again = LabState::from_fragment(&url.hash()).unwrap().unwrap();
        assert_eq!(again, s, "{id} did not round-trip");
    }
}
