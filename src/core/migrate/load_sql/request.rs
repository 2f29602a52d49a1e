//! What a SQL load is given: the caller's [`LoadRequest`], and the [`Load`] settled from it before
//! the transaction opens, which every attempt at the transaction works from unchanged.

use std::time::Instant;

use chrono::NaiveDateTime;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::core::db::{Db, Dialect};
use crate::core::ironic::target::TargetSchema;
use crate::core::migrate::events::LoadEvent;
use crate::core::migrate::plan::{NodePlan, Plan};

pub struct LoadRequest<'a> {
    pub plan: &'a Plan,
    pub schema: &'a TargetSchema,
    pub rehearse: bool,
    /// redacted source URL, for the run record
    pub source: String,
    pub run_id: crate::core::migrate::run::RunId,
}

/// One load, as settled before its transaction: the request, where it writes and reports, and the
/// facts about the target read outside the transaction. Nothing here changes between attempts.
pub(super) struct Load<'a> {
    pub db: &'a Db,
    pub req: &'a LoadRequest<'a>,
    /// the nodes the plan writes, in order (a batch is a run of them)
    pub to_write: Vec<&'a NodePlan>,
    pub events: &'a UnboundedSender<LoadEvent>,
    pub cancel: &'a CancellationToken,
    /// when `load_db` was called: the progress events' and the summary's times count from here
    pub started: Instant,
    /// the run row's `started_at`
    pub started_at: NaiveDateTime,
    pub dialect: Dialect,
    pub ncols: Vec<&'static str>,
    pub pcols: Vec<&'static str>,
    /// whether the INSERT returns the ids the database assigned (else they are looked up by uuid)
    pub returning: bool,
    /// bytes per statement at most (the server's limit and ours)
    pub budget: usize,
    /// whether the run is recorded: always when it commits, and on a rehearsal whose run tables exist
    pub record_run: bool,
    /// whether this load creates the run tables (they are missing and it is not a rehearsal)
    pub create_runs_table: bool,
    /// whether they were created before the transaction (MySQL's DDL commits implicitly)
    pub ddl_outside: bool,
    /// the run tables that were missing (dropped again when created outside and not committed)
    pub missing_tables: Vec<&'static str>,
}
