//! What a step can fail with: the error of the core module that failed, unchanged.

use crate::core::auth::AuthError;
use crate::core::db::DbError;
use crate::core::ironic::api::ApiError;
use crate::core::ironic::target::TargetError;
use crate::core::kind::{HasKind, Kind};
use crate::core::logs::watch::WatchError;
use crate::core::migrate::load_api::rollback::ApiRollbackError;
use crate::core::migrate::load_api::ApiLoadError;
use crate::core::migrate::load_sql::LoadError;
use crate::core::migrate::prepare::PrepareError;
use crate::core::migrate::rollback::RollbackError;
use crate::core::migrate::run::store::{FindError, RecordError};
use crate::core::migrate::run::RunKind;
use crate::core::source::nova_bm::SourceError;

/// What a step can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// a connection is missing from the settings (a usage error: see [`PrepareError`]'s kind)
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Source(#[from] SourceError),
    /// no such run, or it is not committed
    #[error(transparent)]
    Run(#[from] RollbackError),
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error(transparent)]
    Logs(#[from] WatchError),
    /// Keystone credentials that cannot be used (an unknown cloud, a bad clouds.yaml)
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// where API runs are kept (the Ironic database's run table, or the state directory)
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    ApiLoad(#[from] ApiLoadError),
    /// undoing an API run through the API
    #[error(transparent)]
    ApiRollback(#[from] ApiRollbackError),
    /// the load into the Ironic database (rolled back)
    #[error(transparent)]
    Load(#[from] LoadError),
    /// the run asked for is not where runs are kept (not there at all is a usage error:
    /// [`FindError`]'s kind)
    #[error(transparent)]
    Find(#[from] FindError),
    /// the step needs the Ironic API and none was given (a usage error); `what` says what for
    #[error("{what} needs the Ironic API: give --ironic-url, BM2IRONIC_IRONIC_URL or Keystone credentials (--os-cloud, OS_CLOUD, OS_AUTH_URL ...)")]
    NoApi { what: &'static str },
    /// decisions that match no conflict of the plan: the operator's file is wrong (a usage error)
    #[error("resolutions file {file}: {count} decision(s) match no conflict of this plan (a wrong node id, or the node no longer has that conflict): {}", examples.iter().take(10).cloned().collect::<Vec<_>>().join("; "))]
    Unmatched { file: String, count: usize, examples: Vec<String> },
    /// options the plan cannot go on without (the deploy images, an arch): the operator's to give
    #[error("{0}")]
    MissingOptions(crate::core::migrate::plan::MissingOptions),
    /// blocking conflicts left undecided: nothing is written (exit 3)
    #[error("{count} blocking conflict(s) unresolved: nothing {}", if *kind == RunKind::Api { "created" } else { "written" })]
    Blocking { count: usize, kind: RunKind },
    /// a run made through the API, with no API given to undo it (a usage error)
    #[error("run {run} went through the Ironic API: give --ironic-url or Keystone credentials (--os-cloud, OS_*)")]
    ApiRun { run: String },
    /// the face did not go ahead (not confirmed, no terminal to confirm on): its own words
    #[error("{0}")]
    Refused(String),
    /// a decision this way into Ironic cannot carry out (a usage error: decide otherwise, or load
    /// by the other way)
    #[error("{decision} cannot be done through the Ironic API: {why} ({count} node(s): {examples}); nothing was created. Decide `skip` for them, or load with --via db")]
    NotThroughApi { decision: &'static str, why: &'static str, count: usize, examples: String },
    /// an Ironic target used after it was closed (a bug: said, never a panic)
    #[error("internal error: the Ironic target was used after it was closed")]
    Closed,
    /// an API load asked for without a plan made against the API's view just before (a bug)
    #[error("internal error: the load through the API needs a plan made against the API's view just before it")]
    NotPlanned,
}

impl HasKind for StepError {
    /// The failed module's own kind; the step's own errors: a missing API, decisions that match
    /// nothing and an API run with no API to undo it are the operator's, undecided conflicts are
    /// conflicts, a face that did not go ahead is not an error of input.
    fn kind(&self) -> Kind {
        match self {
            StepError::Prepare(e) => e.kind(),
            StepError::Db(e) => e.kind(),
            StepError::Target(e) => e.kind(),
            StepError::Source(e) => e.kind(),
            StepError::Run(e) => e.kind(),
            StepError::Api(e) => e.kind(),
            StepError::Logs(e) => e.kind(),
            StepError::Auth(e) => e.kind(),
            StepError::Record(e) => e.kind(),
            StepError::ApiLoad(e) => e.kind(),
            StepError::ApiRollback(e) => e.kind(),
            StepError::Load(e) => e.kind(),
            StepError::Find(e) => e.kind(),
            StepError::NoApi { .. }
            | StepError::Unmatched { .. }
            | StepError::ApiRun { .. }
            | StepError::NotThroughApi { .. }
            | StepError::MissingOptions(_) => Kind::Usage,
            StepError::Blocking { .. } => Kind::Conflicts,
            StepError::Refused(_) | StepError::Closed | StepError::NotPlanned => Kind::Runtime,
        }
    }
}
