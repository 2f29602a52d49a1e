//! The wizard's messages (what can happen to it) and effects (what `update` asks the runtime to do),
//! and the status line's state. Jobs report typed errors; `update` keeps the words the screens show.
//! It names no screen: its payloads are the core's types, [`Field`] (`field.rs`) and
//! [`FlavorView`] (`views.rs`), so that every screen and job can import it.

use std::sync::Arc;
use std::time::Duration;

use ratatui::crossterm::event::KeyEvent;

use super::error::JobError;
use super::field::Field;
use super::work::{Finished, FlavorView};
use crate::core::ironic::verdict::{TakeoverEvent, TakeoverOutcome};
use crate::core::logs::follow::LogLine;
use crate::core::migrate::events::LoadEvent;
use crate::core::migrate::prepare::Prepared;

/// What the runtime must do for `update`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    TestConnection {
        field: Field,
    },
    Prepare,
    StartLoad {
        rehearse: bool,
    },
    Cancel,
    SaveResolutions,
    WriteReport,
    /// follow Ironic's takeover of the committed run (after a clean verify, with an Ironic API)
    CheckTakeover,
    PlanFlavors,
    ApplyFlavors,
    /// journal the decisions (every one, as it is made): the next wizard reloads them
    Journal {
        path: String,
        text: String,
    },
    /// make the plan again on a worker thread after a decision (large inventories: `App::decided`)
    Replan {
        generation: u64,
    },
    /// read every live node's BMC once (`b` on Inventory; read only), then plan again with what it read
    CheckBmc,
    /// keep the summary's next steps as a checklist in the state directory (`next-steps-RUN.md`)
    WriteChecklist {
        run_id: String,
        text: String,
    },
    Quit,
}

/// Everything that can happen to the wizard. Jobs report typed errors; `update` keeps the words
/// the screens show.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Tick(Duration),
    /// A connection test of the field's value of `generation` finished.
    Tested {
        field: Field,
        generation: u64,
        result: Result<String, JobError>,
    },
    Prepared(Result<Arc<Prepared>, JobError>),
    Load(LoadEvent),
    /// The load ended: the plan it loaded and the outcome the core decided (verified when a run
    /// stayed), or why no plan could be made.
    LoadDone(Result<Arc<Finished>, JobError>),
    Logs(Vec<LogLine>),
    Saved(Result<String, JobError>),
    /// The run report was written (where).
    ReportWritten(Result<String, JobError>),
    Takeover(TakeoverEvent),
    TakeoverDone(Result<TakeoverOutcome, JobError>),
    Flavors(Result<FlavorView, JobError>),
    FlavorsApplied(Result<String, JobError>),
    /// The plan made again after a decision, on a worker thread (`Effect::Replan`), and its time (ms).
    Replanned {
        generation: u64,
        /// the plan, or why it could not be made (the worker thread panicked)
        plan: Result<Box<crate::core::migrate::plan::Plan>, String>,
        ms: f64,
    },
    /// The BMC check's progress (`Effect::CheckBmc`): BMCs read so far of all.
    BmcProgress {
        done: usize,
        total: usize,
    },
    /// The BMC check ended: what it read, or why it could not run (no ipmitool).
    BmcChecked(Result<Arc<crate::core::bmc::BmcFacts>, String>),
    /// Something the operator should know while work goes on (a project-scoped token's limits).
    Warning(String),
}

/// The line under the screen, the overlays, and whether the wizard ends.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub toast: Option<String>,
    /// work the operator waits for (a spinner and these words)
    pub busy: Option<String>,
    pub help: bool,
    pub quit_asked: bool,
    /// `w` at the quit question: quit once the decisions are saved
    pub quit_after_save: bool,
    pub spinner: usize,
    pub quit: bool,
}

/// What the wizard knows of an existing decisions file.
#[derive(Debug, Clone, Default)]
pub struct DecisionsFile {
    /// found at start with these decisions, not asked about yet: offered
    pub offer: Option<(String, crate::core::migrate::conflict::Resolutions)>,
    /// there and not read by this wizard: saving asks before replacing it
    pub unread: Option<String>,
    /// `w` asked to replace `unread`: the question is up
    pub replace_asked: bool,
}
