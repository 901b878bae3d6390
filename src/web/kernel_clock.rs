//! The page's side of the kernel clock (the full module): when a run waits for its GPU's
//! measured kernel tables (`session::kernel_clock`), fetches `kernels/<gpu>.json` once, hands the
//! file (or why it did not come) to the session, which builds the runs again; meanwhile the
//! runs' clock notes stand in the messages box, under the kind `clock`.

use std::cell::RefCell;
use std::collections::BTreeSet;

use super::app::App;
use super::dom;

thread_local! {
    /// The GPUs whose tables were asked for: each file is fetched once a page.
    static ASKED: RefCell<BTreeSet<String>> = const { RefCell::new(BTreeSet::new()) };
}

impl App {
    /// Shows the runs' clock notes, and fetches the tables a run waits for.
    pub fn follow_clock(&self) {
        let (wanted, notes) = {
            let lab = self.lab();
            (lab.kernel_tables_wanted(), lab.clock_notes().join(" "))
        };
        if notes.is_empty() {
            self.messages.clear("clock");
        } else {
            self.messages.notice("clock", &notes);
        }
        let Some(gpu) = wanted else { return };
        if !ASKED.with(|a| a.borrow_mut().insert(gpu.clone())) {
            return;
        }
        let Some(app) = self.rc() else { return };
        let path = format!("kernels/{gpu}.json");
        let fetched = move |file: Result<&str, &str>| {
            let rebuilt = app.session_mut().kernel_tables_fetched(&gpu, file);
            if let Err(why) = rebuilt {
                // The tables came and cannot price this setup: it stays on the roofline.
                app.messages.error("clock-tables", &why);
            }
            app.sync_controls();
            app.view.borrow_mut().invalidate();
            app.follow_clock();
            app.update_url();
            app.request_frame();
        };
        let fetched = std::rc::Rc::new(fetched);
        let failed = fetched.clone();
        dom::fetch_text(
            &path,
            &path,
            &web_sys::RequestInit::new(),
            move |text| fetched(Ok(&text)),
            move |why| failed(Err(&why)),
        );
    }
}
