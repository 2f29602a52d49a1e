//! What a step can fail with: the error of the core module that failed, unchanged.

use crate::core::auth::AuthError;
use crate::core::db::DbError;
use crate::core::ironic::api::ApiError;
use crate::core::ironic::target::TargetError;
use crate::core::logs::watch::WatchError;
use crate::core::migrate::load_api::record::RecordError;
use crate::core::migrate::load_api::ApiLoadError;
use crate::core::migrate::prepare::PrepareError;
use crate::core::migrate::rollback::RollbackError;
use crate::core::source::nova_bm::SourceError;

/// What a step can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// a connection is missing from the settings (a usage error: see [`PrepareError::is_usage`])
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
    /// no Ironic database given, and no API run kept in the state directory either
    #[error("no Ironic database given: use --ironic-db URL, BM2IRONIC_IRONIC_DB, or --ironic-conf with [database] connection (no API run{} in {dir} either: for a run made with --via api give --state-dir)", run.as_ref().map(|r| format!(" {r}")).unwrap_or_default())]
    NoRunHere { run: Option<String>, dir: String },
    /// the step needs the Ironic API and none was given (a usage error); `what` says what for
    #[error("{what} needs the Ironic API: give --ironic-url, BM2IRONIC_IRONIC_URL or Keystone credentials (--os-cloud, OS_CLOUD, OS_AUTH_URL ...)")]
    NoApi { what: &'static str },
}

impl StepError {
    /// A missing connection or API is a usage error (exit 2); everything else is a runtime one.
    pub fn is_usage(&self) -> bool {
        match self {
            StepError::Prepare(e) => e.is_usage(),
            StepError::NoApi { .. } | StepError::NoRunHere { .. } => true,
            StepError::ApiLoad(ApiLoadError::Prepare(e)) => e.is_usage(),
            _ => false,
        }
    }
}
