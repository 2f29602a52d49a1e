//! The command-line contract's exit codes, and `Failure`: how a command ends when it does not
//! succeed. Every core error converts into a `Failure` by its kind (`core/kind.rs`: usage, runtime,
//! conflicts), decided once beside the error; the message is the error's own text, written once,
//! when it is shown.

use crate::core::kind::{HasKind, Kind};

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

/// A command's failure: the exit code and one line for the operator (already redacted). Made only
/// from a [`Kind`] (`Failure::of`, `usage`, `runtime`, or a core error's own kind): its fields are
/// private, so no command picks an exit code by hand.
#[derive(Debug)]
pub struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// The exit code.
    pub fn code(&self) -> u8 {
        self.code
    }
    /// The line shown to the operator.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// A failure of the world (a database, the API, a file): `Failure::of(Kind::Runtime, ...)`.
    pub fn runtime(message: impl Into<String>) -> Failure {
        Failure::of(Kind::Runtime, message)
    }
    /// The operator's input is wrong or missing: `Failure::of(Kind::Usage, ...)`.
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::of(Kind::Usage, message)
    }
    /// A failure of `kind` (its exit code), saying `message`.
    pub fn of(kind: Kind, message: impl Into<String>) -> Failure {
        let code = match kind {
            Kind::Usage => exit::USAGE,
            Kind::Runtime => exit::RUNTIME,
            Kind::Conflicts => exit::CONFLICTS,
            Kind::Differences => exit::DIFFERENCES,
        };
        Failure { code, message: message.into() }
    }
}

impl<E: HasKind + std::fmt::Display> From<E> for Failure {
    /// Every core error, by its own [`HasKind::kind`]: the one place a kind becomes an exit code.
    fn from(e: E) -> Failure {
        Failure::of(e.kind(), e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ironic::target::TargetError;
    use crate::core::logs::watch::WatchError;
    use crate::core::migrate::flavors::FlavorError;
    use crate::core::migrate::hosts::HostsError;
    use crate::core::migrate::load_api::ApiLoadError;
    use crate::core::migrate::load_sql::LoadError;
    use crate::core::migrate::prepare::PrepareError;
    use crate::core::migrate::rollback::RollbackError;
    use crate::core::migrate::run::store::FindError;
    use crate::core::migrate::steps::StepError;
    use crate::core::settings::conf_file::ConfError;
    use crate::core::settings::SettingsError;

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
        // the same mistake gives the same code on every path (before: 2 from `watch --run`, 1 from
        // `rollback --run`; 1 for a bad --object-version met while preparing)
        assert_eq!(Failure::from(StepError::Find(FindError::Unknown("r".into()))).code, exit::USAGE);
        assert_eq!(Failure::from(RollbackError::Find(FindError::Unknown("r".into()))).code, exit::USAGE);
        let e = PrepareError::Target(TargetError::BadObjectVersion("x".into()));
        assert_eq!(Failure::from(StepError::Prepare(e)).code, exit::USAGE);
        // undecided conflicts are exit 3 however they are met
        assert_eq!(
            Failure::from(StepError::Blocking { count: 2, kind: crate::core::migrate::run::RunKind::Api }).code,
            exit::CONFLICTS
        );
        assert_eq!(Failure::from(ApiLoadError::Blocked(2)).code, exit::CONFLICTS);
        assert_eq!(Failure::from(HostsError::Refused(vec!["x".into()])).code, exit::CONFLICTS);
        assert_eq!(Failure::from(HostsError::NothingToRestore).code, exit::USAGE);
        assert_eq!(Failure::from(StepError::Refused("no".into())).code, exit::RUNTIME);
        // a nova.conf that is not an INI file: 2 from `config` and (before) 1 from `plan`
        let e = ConfError::Syntax { path: "n".into(), line: 1, reason: "r".into() };
        assert_eq!(Failure::from(SettingsError::Conf(e)).code, exit::USAGE);
        let e = ConfError::NoBaremetalSection { path: "n".into() };
        assert_eq!(Failure::from(SettingsError::Conf(e)).code, exit::RUNTIME);
    }
}
