//! What an API load (and what prepares it) can fail with as a whole; a node's own failure is
//! reported with that node and the load goes on.

use crate::core::ironic::api::ApiError;
use crate::core::migrate::prepare::PrepareError;
use crate::core::migrate::run::store::RecordError;

#[derive(Debug, thiserror::Error)]
pub enum ApiLoadError {
    #[error("{0} blocking conflict(s) unresolved: nothing created (see `bm2ironic plan`)")]
    Blocked(usize),
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("recording the run: {0}")]
    Record(#[from] RecordError),
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// Ironic stopped answering mid-run: the run stopped there, every node left where it stood
    #[error("the Ironic API at {url} stopped answering ({error}); run {run} stopped after {settled} of {total} node(s), each left where it stood: once Ironic answers again, run `bm2ironic migrate --via api` again to resume it (`bm2ironic rollback --run {run}` undoes it)")]
    IronicGone { url: String, error: String, run: String, settled: usize, total: usize },
}

impl crate::core::kind::HasKind for ApiLoadError {
    fn kind(&self) -> crate::core::kind::Kind {
        use crate::core::kind::Kind;
        match self {
            ApiLoadError::Blocked(_) => Kind::Conflicts,
            ApiLoadError::Api(e) => e.kind(),
            ApiLoadError::Prepare(e) => e.kind(),
            ApiLoadError::Record(_) | ApiLoadError::IronicGone { .. } => Kind::Runtime,
        }
    }
}
