//! A run's status, typed. `bm2ironic_runs.status` and an API run's file hold it as the strings
//! earlier versions wrote ("committed", "api-partial", ...), so their rows and files still read;
//! a status this version does not know is kept as it was written and never acted on. Which
//! statuses a rollback takes, and which a rerun resumes, is decided here and nowhere else.
//! See docs/architecture.md ("Runs").

use serde::{Deserialize, Serialize};

/// How a run wrote: one SQL transaction, or node by node through Ironic's API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    Sql,
    Api,
}

/// Where a run stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum RunStatus {
    /// an SQL load that committed
    Committed,
    /// an SQL rehearsal (its row is rolled back with it: never seen committed)
    Rehearsal,
    /// an SQL run that `rollback` undid
    RolledBack,
    /// an API run under way, or killed while it ran: a rerun resumes it
    ApiRunning,
    /// an API run that ended with nodes failed or interrupted: a rerun resumes it
    ApiPartial,
    /// an API run whose every node was enrolled and adopted or provided
    ApiCommitted,
    /// an API run that `rollback` undid
    ApiRolledBack,
    /// a status this version does not know (a later version wrote it): shown, never acted on
    Other(String),
}

impl RunStatus {
    /// As stored.
    pub fn as_str(&self) -> &str {
        match self {
            RunStatus::Committed => "committed",
            RunStatus::Rehearsal => "rehearsal",
            RunStatus::RolledBack => "rolled-back",
            RunStatus::ApiRunning => "api-running",
            RunStatus::ApiPartial => "api-partial",
            RunStatus::ApiCommitted => "api-committed",
            RunStatus::ApiRolledBack => "api-rolled-back",
            RunStatus::Other(s) => s,
        }
    }

    /// SQL or API (an unknown status by its `api-` prefix, as earlier versions told them apart).
    pub fn kind(&self) -> RunKind {
        match self {
            RunStatus::Committed | RunStatus::Rehearsal | RunStatus::RolledBack => RunKind::Sql,
            RunStatus::ApiRunning | RunStatus::ApiPartial | RunStatus::ApiCommitted | RunStatus::ApiRolledBack => {
                RunKind::Api
            }
            RunStatus::Other(s) if s.starts_with("api-") => RunKind::Api,
            RunStatus::Other(_) => RunKind::Sql,
        }
    }

    /// An API run not finished: the next `migrate --via api` resumes it.
    pub fn is_resumable(&self) -> bool {
        matches!(self, RunStatus::ApiRunning | RunStatus::ApiPartial)
    }

    /// What a rollback of an SQL run takes: a committed load, and nothing else.
    pub fn is_committed_sql(&self) -> bool {
        *self == RunStatus::Committed
    }

    /// What a rollback takes: a committed SQL load, or an API run not rolled back yet (finished or
    /// not: its nodes are where the record says). Never a status this version does not know.
    pub fn is_rollbackable(&self) -> bool {
        matches!(self, RunStatus::Committed | RunStatus::ApiRunning | RunStatus::ApiPartial | RunStatus::ApiCommitted)
    }
}

impl From<String> for RunStatus {
    fn from(s: String) -> RunStatus {
        match s.as_str() {
            "committed" => RunStatus::Committed,
            "rehearsal" => RunStatus::Rehearsal,
            "rolled-back" => RunStatus::RolledBack,
            "api-running" => RunStatus::ApiRunning,
            "api-partial" => RunStatus::ApiPartial,
            "api-committed" => RunStatus::ApiCommitted,
            "api-rolled-back" => RunStatus::ApiRolledBack,
            _ => RunStatus::Other(s),
        }
    }
}

impl From<&str> for RunStatus {
    fn from(s: &str) -> RunStatus {
        RunStatus::from(s.to_string())
    }
}

impl From<RunStatus> for String {
    fn from(s: RunStatus) -> String {
        match s {
            RunStatus::Other(s) => s,
            known => known.as_str().to_string(),
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [RunStatus; 7] = [
        RunStatus::Committed,
        RunStatus::Rehearsal,
        RunStatus::RolledBack,
        RunStatus::ApiRunning,
        RunStatus::ApiPartial,
        RunStatus::ApiCommitted,
        RunStatus::ApiRolledBack,
    ];

    #[test]
    fn the_strings_earlier_versions_wrote_read_back_as_themselves() {
        for s in ALL {
            let text = s.to_string();
            assert_eq!(RunStatus::from(text.clone()), s);
            // JSON (an API run's file) holds the bare string, as before
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<RunStatus>(&format!("\"{text}\"")).unwrap(), s);
        }
        assert_eq!(RunStatus::Committed.as_str(), "committed");
        assert_eq!(RunStatus::ApiCommitted.as_str(), "api-committed");
        assert_eq!(RunStatus::RolledBack.as_str(), "rolled-back");
    }

    #[test]
    fn an_unknown_status_is_kept_and_never_acted_on() {
        let s = RunStatus::from("api-paused");
        assert_eq!(s, RunStatus::Other("api-paused".into()));
        assert_eq!(
            (s.kind(), s.is_resumable(), s.is_committed_sql(), s.is_rollbackable()),
            (RunKind::Api, false, false, false)
        );
        assert_eq!(s.to_string(), "api-paused");
        let s = RunStatus::from("Committed"); // not ours: case matters, as it did
        assert_eq!((s.kind(), s.is_committed_sql()), (RunKind::Sql, false));
    }

    #[test]
    fn kinds_and_what_a_rerun_or_a_rollback_takes() {
        let api: Vec<_> = ALL.iter().filter(|s| s.kind() == RunKind::Api).collect();
        assert_eq!(api.len(), 4);
        assert!(api.iter().all(|s| s.as_str().starts_with("api-")));
        let resumable: Vec<_> = ALL.iter().filter(|s| s.is_resumable()).collect();
        assert_eq!(resumable, [&RunStatus::ApiRunning, &RunStatus::ApiPartial]);
        let committed: Vec<_> = ALL.iter().filter(|s| s.is_committed_sql()).collect();
        assert_eq!(committed, [&RunStatus::Committed]);
        let undone: Vec<_> = ALL.iter().filter(|s| !s.is_rollbackable()).collect();
        assert_eq!(undone, [&RunStatus::Rehearsal, &RunStatus::RolledBack, &RunStatus::ApiRolledBack]);
    }
}
