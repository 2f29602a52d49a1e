//! The command-line contract's exit codes, and `Failure`: how a command ends when it does not
//! succeed. Every core error converts into a `Failure` with the exit code it implies (`?` at the
//! edge); the message is the error's own text, written once, when it is shown.

use crate::core::auth::AuthError;
use crate::core::db::DbError;
use crate::core::demo::sandbox::SandboxError;
use crate::core::ironic::api::ApiError;
use crate::core::ironic::target::TargetError;
use crate::core::logs::watch::WatchError;
use crate::core::migrate::conflict::ResolutionError;
use crate::core::migrate::flavors::FlavorError;
use crate::core::migrate::load_api::rollback::ApiRollbackError;
use crate::core::migrate::load_api::ApiLoadError;
use crate::core::migrate::load_sql::LoadError;
use crate::core::migrate::prepare::PrepareError;
use crate::core::migrate::rollback::RollbackError;
use crate::core::migrate::run::store::{FindError, RecordError};
use crate::core::migrate::steps::StepError;
use crate::core::settings::SettingsError;
use crate::core::source::nova_bm::SourceError;
use crate::tui::error::WizardError;

/// Exit codes of the command-line contract.
pub mod exit {
    /// success
    pub const OK: u8 = 0;
    /// a runtime error: a database, the API, a file
    pub const RUNTIME: u8 = 1;
    /// a usage error: a flag, a URL, a missing connection, no terminal to confirm on
    pub const USAGE: u8 = 2;
    /// blocking conflicts unresolved (`plan`, `migrate`)
    pub const CONFLICTS: u8 = 3;
    /// differences found (`verify`), takeover errors (`verify --takeover`, `watch`)
    pub const DIFFERENCES: u8 = 4;
}

/// A command's failure: the exit code and one line for the operator (already redacted).
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn runtime(message: impl Into<String>) -> Failure {
        Failure { code: exit::RUNTIME, message: message.into() }
    }
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure { code: exit::USAGE, message: message.into() }
    }
    /// A usage error when `usage` holds, a runtime error otherwise.
    fn of(usage: bool, e: impl std::fmt::Display) -> Failure {
        Failure { code: if usage { exit::USAGE } else { exit::RUNTIME }, message: e.to_string() }
    }
}

/// Runtime errors: a database, a source, a load, a rollback, the flavors, the API, the sandbox.
macro_rules! runtime_failure {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for Failure {
            fn from(e: $t) -> Failure {
                Failure::runtime(e.to_string())
            }
        }
    )*};
}
runtime_failure!(
    DbError,
    SourceError,
    LoadError,
    RollbackError,
    FlavorError,
    AuthError,
    ApiRollbackError,
    RecordError,
    SandboxError,
    WizardError
);

impl From<ApiError> for Failure {
    /// An Ironic URL that is not an endpoint: usage; the rest (unreachable, refused, ...): runtime.
    fn from(e: ApiError) -> Failure {
        Failure::of(matches!(e, ApiError::BadUrl { .. }), e)
    }
}

impl From<SettingsError> for Failure {
    fn from(e: SettingsError) -> Failure {
        Failure::of(e.is_usage(), e)
    }
}

impl From<FindError> for Failure {
    /// No database and no run file where runs are kept: usage; the rest: runtime.
    fn from(e: FindError) -> Failure {
        Failure::of(e.is_usage(), e)
    }
}

impl From<PrepareError> for Failure {
    /// No source or no target given: usage; the rest: runtime.
    fn from(e: PrepareError) -> Failure {
        Failure::of(e.is_usage(), e)
    }
}

impl From<TargetError> for Failure {
    /// A bad `--object-version`: usage; the rest (not Ironic, unknown schema, the database): runtime.
    fn from(e: TargetError) -> Failure {
        Failure::of(matches!(e, TargetError::BadObjectVersion(_)), e)
    }
}

impl From<ResolutionError> for Failure {
    /// The decisions given (`--resolve`, `--resolutions FILE`) are the operator's input: usage.
    fn from(e: ResolutionError) -> Failure {
        Failure::usage(e.to_string())
    }
}

impl From<WatchError> for Failure {
    /// A bad patterns file: usage; a log that cannot be read: runtime.
    fn from(e: WatchError) -> Failure {
        Failure::of(matches!(e, WatchError::Patterns { .. }), e)
    }
}

impl From<ApiLoadError> for Failure {
    /// A missing source: usage; the rest: runtime.
    fn from(e: ApiLoadError) -> Failure {
        match e {
            ApiLoadError::Prepare(p) => p.into(),
            e => Failure::runtime(e.to_string()),
        }
    }
}

impl From<StepError> for Failure {
    fn from(e: StepError) -> Failure {
        match e {
            StepError::Prepare(e) => e.into(),
            StepError::Db(e) => e.into(),
            StepError::Target(e) => e.into(),
            StepError::Source(e) => e.into(),
            StepError::Run(e) => e.into(),
            StepError::Api(e) => e.into(),
            StepError::Logs(e) => e.into(),
            StepError::Auth(e) => e.into(),
            StepError::Record(e) => e.into(),
            StepError::ApiLoad(e) => e.into(),
            StepError::Load(e) => e.into(),
            StepError::ApiRollback(e) => e.into(),
            StepError::Find(e) => e.into(),
            e @ StepError::Blocking { .. } => Failure { code: exit::CONFLICTS, message: e.to_string() },
            e if e.is_usage() => Failure::usage(e.to_string()),
            e @ (StepError::Unmatched { .. } | StepError::Refused(_) | StepError::ApiRun { .. }) => {
                Failure::runtime(e.to_string())
            }
            e @ StepError::NoApi { .. } => Failure::usage(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_error() {
        assert_eq!(Failure::from(PrepareError::NoSource).code, exit::USAGE);
        assert_eq!(Failure::from(StepError::Prepare(PrepareError::NoTarget)).code, exit::USAGE);
        assert_eq!(Failure::from(TargetError::BadObjectVersion("x".into())).code, exit::USAGE);
        assert_eq!(Failure::from(LoadError::Cancelled).code, exit::RUNTIME);
        assert_eq!(Failure::from(StepError::Run(RollbackError::Find(FindError::NoRun))).code, exit::RUNTIME);
        let e = FindError::NotKeptHere { run: None, dir: "d".into() };
        assert_eq!(Failure::from(StepError::Find(e)).code, exit::USAGE);
        let e = WatchError::Read { path: "p".into(), reason: "r".into() };
        assert_eq!(Failure::from(e).code, exit::RUNTIME);
        let e = WatchError::Patterns { path: "p".into(), reason: "r".into() };
        assert_eq!(Failure::from(e).code, exit::USAGE);
        assert_eq!(Failure::from(FlavorError::NothingToRestore).message, FlavorError::NothingToRestore.to_string());
    }
}
