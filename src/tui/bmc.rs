//! The wizard's BMC check (`b` on Inventory, issue #51): its progress on the busy line, and what it
//! read installed as plan facts, the plan made again with them (docs/wizard.md, Inventory). The
//! check itself is the core's (`core::bmc`), run by `runtime` as a job.

use std::sync::Arc;

use super::app::App;
use super::msg::Msg;
use crate::core::bmc::BmcFacts;

impl App {
    /// `Msg::BmcProgress` and `Msg::BmcChecked` (other messages are not this file's).
    pub(super) fn on_bmc(&mut self, m: Msg) {
        match m {
            Msg::BmcProgress { done, total } => {
                self.status.busy = Some(format!("reading BMCs (power status, read only): {done} of {total}"))
            }
            Msg::BmcChecked(r) => self.bmc_checked(r),
            _ => {}
        }
    }

    /// The BMC check ended: its readings become plan facts (the plan made again with them; the
    /// Inventory shows a READ column, the conflicts name what it found).
    fn bmc_checked(&mut self, r: Result<Arc<BmcFacts>, String>) {
        self.status.busy = None;
        match r {
            Ok(facts) => {
                self.status.toast = Some(facts.summary());
                self.session.plan_options.bmc = facts;
                self.replan();
            }
            Err(e) => self.status.toast = Some(format!("BMC check not run: {e}")),
        }
    }
}
