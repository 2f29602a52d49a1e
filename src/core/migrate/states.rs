//! nova baremetal's `task_state` values and what each means for the node's fate in Ironic.
//! The states are those of nova's `nova/virt/baremetal/baremetal_states.py`; a row's value is compared
//! after trimming and lower-casing (rows typed by hand hold `Deploying`, `ERROR`, `'deploying '`).
//! The fate of every state, with and without an instance, is documented in docs/mapping.md.

/// One nova baremetal task state, as read from `bm_nodes.task_state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BmState {
    /// NULL or blank: the node was never used.
    Never,
    /// `initializing`: the old INIT state, set when a deploy starts.
    Initializing,
    Active,
    Building,
    Deploying,
    DeployComplete,
    Prepared,
    DeployFailed,
    Error,
    /// `deleted`: nova's destroy sets it while clearing the instance fields.
    Deleted,
    /// Anything else, as it was stored.
    Unknown(String),
}

/// What the state says about the node, given whether the row holds an instance uuid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFate {
    /// Migrate with its instance, `active`.
    Active,
    /// Migrate as a free node.
    Free,
    /// The deploy never finished (`mid-deploy`).
    MidDeploy,
    /// The last deploy failed (`failed-deploy`).
    FailedDeploy,
    /// The state contradicts the row (`inconsistent-state`).
    Inconsistent,
    /// A value nova baremetal never wrote (`unknown-state`).
    Unknown,
}

impl BmState {
    pub fn parse(raw: Option<&str>) -> BmState {
        let s = raw.unwrap_or("").trim().to_ascii_lowercase();
        match s.as_str() {
            "" => BmState::Never,
            "initializing" => BmState::Initializing,
            "active" => BmState::Active,
            "building" => BmState::Building,
            "deploying" => BmState::Deploying,
            "deploy complete" => BmState::DeployComplete,
            "prepared" => BmState::Prepared,
            "deploy failed" => BmState::DeployFailed,
            "error" => BmState::Error,
            "deleted" => BmState::Deleted,
            _ => BmState::Unknown(raw.unwrap_or("").to_string()),
        }
    }

    /// The fate of a live row in this state.
    pub fn fate(&self, has_instance: bool) -> StateFate {
        use BmState::*;
        match (self, has_instance) {
            (Active, true) => StateFate::Active,
            (Initializing | Building | Deploying | DeployComplete | Prepared, true) => StateFate::MidDeploy,
            (Error | DeployFailed, _) => StateFate::FailedDeploy,
            // nova's destroy clears the instance fields when it sets `deleted`; a never-used node has none
            (Never | Deleted, true) => StateFate::Inconsistent,
            (Never | Deleted | Initializing, false) => StateFate::Free,
            // an instance state without an instance
            (Active | Building | Deploying | DeployComplete | Prepared, false) => StateFate::Inconsistent,
            (Unknown(_), _) => StateFate::Unknown,
        }
    }

    /// The state as nova baremetal spells it (`NULL` for none).
    pub fn name(&self) -> &str {
        match self {
            BmState::Never => "NULL",
            BmState::Initializing => "initializing",
            BmState::Active => "active",
            BmState::Building => "building",
            BmState::Deploying => "deploying",
            BmState::DeployComplete => "deploy complete",
            BmState::Prepared => "prepared",
            BmState::DeployFailed => "deploy failed",
            BmState::Error => "error",
            BmState::Deleted => "deleted",
            BmState::Unknown(s) => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_compared_without_case_or_blanks() {
        assert_eq!(BmState::parse(Some("Deploying")), BmState::Deploying);
        assert_eq!(BmState::parse(Some("deploying ")), BmState::Deploying);
        assert_eq!(BmState::parse(Some("ERROR")), BmState::Error);
        assert_eq!(BmState::parse(Some("  ")), BmState::Never);
        assert_eq!(BmState::parse(None), BmState::Never);
        assert_eq!(BmState::parse(Some("frobnicating")), BmState::Unknown("frobnicating".into()));
    }

    #[test]
    fn only_active_with_an_instance_is_active() {
        let all = [
            BmState::Never,
            BmState::Initializing,
            BmState::Active,
            BmState::Building,
            BmState::Deploying,
            BmState::DeployComplete,
            BmState::Prepared,
            BmState::DeployFailed,
            BmState::Error,
            BmState::Deleted,
            BmState::Unknown("x".into()),
        ];
        for s in &all {
            for inst in [false, true] {
                assert_eq!(s.fate(inst) == StateFate::Active, *s == BmState::Active && inst, "{s:?} {inst}");
            }
        }
        assert_eq!(BmState::Initializing.fate(true), StateFate::MidDeploy);
        assert_eq!(BmState::Deleted.fate(true), StateFate::Inconsistent);
        assert_eq!(BmState::Deleted.fate(false), StateFate::Free);
        assert_eq!(BmState::Active.fate(false), StateFate::Inconsistent);
        assert_eq!(BmState::Error.fate(false), StateFate::FailedDeploy);
    }
}
