//! Whose move it is when a step fails, decided once, by the error itself: the operator's input
//! (`Usage`: a flag, a URL, a missing connection, a run id that is not there), the world
//! (`Runtime`: a database, the API, a file), the plan's undecided conflicts (`Conflicts`), or what a
//! check found (`Differences`).
//!
//! Every core error implements [`HasKind`] beside its own definition, so the variant that is the
//! operator's to fix is named where the variant is. The faces map the kind to what they show: the
//! command line to its exit codes 2, 1, 3 and 4 (`cli/failure.rs`, docs/architecture.md "Exit codes").

/// What kind of failure an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// the operator's input is wrong or missing: fixing the command fixes it
    Usage,
    /// something outside the command failed: a database, the API, a file, a signal
    Runtime,
    /// blocking conflicts are left undecided: nothing was written
    Conflicts,
    /// the command ran and found what the operator must look at: differences between a run and
    /// Ironic (`verify`), takeover errors (`watch`, `verify --takeover`), nodes whose next boot was
    /// not fixed (`juno-boot`)
    Differences,
}

/// An error that knows its [`Kind`].
pub trait HasKind {
    fn kind(&self) -> Kind;
}

/// `HasKind` for errors that are always of one kind.
macro_rules! always {
    ($kind:ident: $($t:ty),* $(,)?) => {$(
        impl $crate::core::kind::HasKind for $t {
            fn kind(&self) -> $crate::core::kind::Kind {
                $crate::core::kind::Kind::$kind
            }
        }
    )*};
}
pub(crate) use always;

always!(Runtime: crate::core::db::DbError, crate::core::auth::AuthError);
