//! Conflicts (stable codes, listed with their actions in docs/conflicts.md) and the operator's decisions about them. Resolutions
//! are data: saved by the wizard, replayed by `migrate --resolutions FILE`, or given per code with
//! `--resolve CODE=ACTION`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

macro_rules! codes {
    ($($variant:ident = $text:literal, blocking: $blocking:literal, actions: [$($action:ident),*], default: $default:expr;)*) => {
        /// Every conflict has a stable code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum ConflictCode { $($variant),* }

        impl ConflictCode {
            pub const ALL: &'static [ConflictCode] = &[$(ConflictCode::$variant),*];
            pub fn as_str(self) -> &'static str { match self { $(ConflictCode::$variant => $text),* } }
            /// Blocking conflicts stop `migrate` until resolved.
            pub fn blocking(self) -> bool { match self { $(ConflictCode::$variant => $blocking),* } }
            pub fn actions(self) -> &'static [Action] { match self { $(ConflictCode::$variant => &[$(Action::$action),*]),* } }
            /// What happens when the operator says nothing (non-blocking codes only).
            pub fn default_action(self) -> Option<Action> { match self { $(ConflictCode::$variant => $default),* } }
        }
    };
}

codes! {
    DeletedNode = "deleted-node", blocking: false, actions: [Skip, Migrate], default: Some(Action::Skip);
    OrphanInterface = "orphan-interface", blocking: false, actions: [Skip], default: Some(Action::Skip);
    InvalidMac = "invalid-mac", blocking: true, actions: [SkipPort, Skip], default: None;
    DuplicateMac = "duplicate-mac", blocking: true, actions: [SkipPort, Skip], default: None;
    MacInIronic = "mac-in-ironic", blocking: true, actions: [SkipPort, Skip], default: None;
    UuidInIronic = "uuid-in-ironic", blocking: true, actions: [Skip, Replace], default: None;
    AlreadyMigrated = "already-migrated", blocking: false, actions: [Skip], default: Some(Action::Skip);
    UnrecordedRun = "unrecorded-run", blocking: true, actions: [Skip], default: None;
    InstanceInIronic = "instance-in-ironic", blocking: true, actions: [Skip], default: None;
    MissingUuid = "missing-uuid", blocking: true, actions: [Generate, Skip], default: None;
    MidDeploy = "mid-deploy", blocking: true, actions: [Maintenance, Skip], default: None;
    FailedDeploy = "failed-deploy", blocking: true, actions: [Maintenance, Skip], default: None;
    InstanceMissingInNova = "instance-missing-in-nova", blocking: true, actions: [Free, Maintenance, Skip], default: None;
    MissingBmc = "missing-bmc", blocking: true, actions: [Maintenance, Skip], default: None;
    UnsupportedPower = "unsupported-power", blocking: true, actions: [Maintenance, Skip], default: None;
    MissingArch = "missing-arch", blocking: true, actions: [Skip], default: None;
    IncompleteProperties = "incomplete-properties", blocking: false, actions: [Maintenance, Migrate, Skip], default: Some(Action::Migrate);
    MissingDeployImages = "missing-deploy-images", blocking: true, actions: [], default: None;
    NovaComputeRunning = "nova-compute-running", blocking: true, actions: [Ignore], default: None;
    UnknownState = "unknown-state", blocking: true, actions: [Maintenance, Skip], default: None;
    InconsistentState = "inconsistent-state", blocking: true, actions: [Maintenance, Skip], default: None;
    InvalidUuid = "invalid-uuid", blocking: true, actions: [Generate, Skip], default: None;
    DuplicateUuid = "duplicate-uuid", blocking: true, actions: [Generate, Skip], default: None;
    DuplicateInstance = "duplicate-instance", blocking: true, actions: [Free, Skip], default: None;
    AmbiguousInstance = "ambiguous-instance", blocking: true, actions: [KeepInstance, Free, Maintenance, Skip], default: None;
    InvalidSize = "invalid-size", blocking: true, actions: [Maintenance, Skip], default: None;
    IncompleteInstanceInfo = "incomplete-instance-info", blocking: true, actions: [Maintenance, Skip], default: None;
    UnknownBoot = "unknown-boot", blocking: true, actions: [LocalBoot, Maintenance, Skip], default: None;
    NoMatchingFlavor = "no-matching-flavor", blocking: false, actions: [Migrate, Maintenance, Skip], default: Some(Action::Migrate);
    BmcNoAnswer = "bmc-no-answer", blocking: false, actions: [Migrate, Maintenance, Skip], default: Some(Action::Migrate);
    BmcRefused = "bmc-refused", blocking: false, actions: [Migrate, Maintenance, Skip], default: Some(Action::Migrate);
    PowerMismatch = "power-mismatch", blocking: false, actions: [Migrate, Maintenance, Skip], default: Some(Action::Migrate);
    DuplicateBmc = "duplicate-bmc", blocking: true, actions: [Maintenance, Skip], default: None;
}

impl ConflictCode {
    /// Raised from what the BMC check read (`--check-bmc`): facts of the moment, not of nova_bm.
    pub fn read_from_bmcs(self) -> bool {
        use ConflictCode as C;
        matches!(self, C::BmcNoAnswer | C::BmcRefused | C::PowerMismatch | C::DuplicateBmc)
    }
}

impl fmt::Display for ConflictCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ConflictCode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ConflictCode::ALL.iter().copied().find(|c| c.as_str() == s).ok_or_else(|| {
            format!(
                "unknown conflict code '{s}' (known: {})",
                ConflictCode::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
            )
        })
    }
}

impl Serialize for ConflictCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ConflictCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Skip,
    Migrate,
    SkipPort,
    Replace,
    Generate,
    Maintenance,
    Free,
    Ignore,
    /// `ambiguous-instance`: this claimant is the machine that runs the instance (the operator's word)
    KeepInstance,
    /// `unknown-boot`: the instance's disk has a bootloader (the operator's word)
    LocalBoot,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Skip => "skip",
            Action::Migrate => "migrate",
            Action::SkipPort => "skip-port",
            Action::Replace => "replace",
            Action::Generate => "generate",
            Action::Maintenance => "maintenance",
            Action::Free => "free",
            Action::Ignore => "ignore",
            Action::KeepInstance => "keep-instance",
            Action::LocalBoot => "local-boot",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Action {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [
            Action::Skip,
            Action::Migrate,
            Action::SkipPort,
            Action::Replace,
            Action::Generate,
            Action::Maintenance,
            Action::Free,
            Action::Ignore,
            Action::KeepInstance,
            Action::LocalBoot,
        ]
        .into_iter()
        .find(|a| a.as_str() == s)
        .ok_or_else(|| format!("unknown action '{s}'"))
    }
}

/// What a conflict is about: a node (by nova_bm id), an interface, a host, or the whole run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    Node { nova_bm_id: i64 },
    Interface { nova_bm_id: i64, interface_id: i64 },
    Host { host: String },
    Run,
}

/// One conflict found by the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    pub code: ConflictCode,
    pub blocking: bool,
    pub subject: Subject,
    pub node_uuid: Option<String>,
    pub detail: String,
    /// The decision that applies (None while a blocking conflict is unresolved).
    pub action: Option<Action>,
    /// Where the decision came from: "default", "--resolve", "resolutions file".
    pub decided_by: Option<&'static str>,
}

impl Conflict {
    pub fn is_unresolved_blocking(&self) -> bool {
        self.blocking && self.action.is_none()
    }
}

/// One saved decision about one conflict.
#[derive(Debug, Clone, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    pub code: ConflictCode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub action: Action,
    /// made with a key in this wizard session (not read from a file): `decided_by` says "key"
    #[serde(skip)]
    pub by_key: bool,
}

/// Two decisions are the same decision whoever made them (a key, a file).
impl PartialEq for Decision {
    fn eq(&self, o: &Decision) -> bool {
        (self.code, self.node, self.interface, &self.host, self.action)
            == (o.code, o.node, o.interface, &o.host, o.action)
    }
}

/// The operator's decisions: per code (`--resolve`, `[defaults]` of a file) and per item.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resolutions {
    #[serde(default)]
    pub defaults: BTreeMap<ConflictCode, Action>,
    #[serde(default, rename = "decision")]
    pub decisions: Vec<Decision>,
    /// codes whose default came from `--resolve` (not the file), so `decided_by` says which
    #[serde(skip)]
    pub flag_codes: std::collections::BTreeSet<ConflictCode>,
    /// codes whose default was set with a key in this wizard session (`a`, then an action)
    #[serde(skip)]
    pub keyed_codes: std::collections::BTreeSet<ConflictCode>,
}

/// A resolutions file is a few kilobytes; anything past this is not one (`/dev/zero`, a log).
pub const MAX_RESOLUTIONS_FILE: u64 = 1024 * 1024;

/// At most this much of a parser message is shown (a 10 MB value must not be echoed).
fn clip(text: &str) -> String {
    const MAX: usize = 400;
    if text.len() <= MAX {
        return text.to_string();
    }
    let mut cut = MAX;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{} [... {} bytes more]", &text[..cut], text.len() - cut)
}

#[derive(Debug, thiserror::Error)]
pub enum ResolutionError {
    #[error("cannot read resolutions file {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("resolutions file {path}: {reason}")]
    Parse { path: String, reason: String },
    #[error("--resolve {given}: {reason}")]
    Flag { given: String, reason: String },
}

impl Resolutions {
    pub fn load(path: &Path) -> Result<Resolutions, ResolutionError> {
        let shown = path.display().to_string();
        let read_err = |reason: String| ResolutionError::Read { path: shown.clone(), reason };
        // a regular file only (opened without blocking: a FIFO hung the read), at most 1 MiB; a
        // leading byte order mark is skipped by the TOML parser (TOML 1.1 allows it)
        let text =
            crate::core::settings::file::read_text(path, MAX_RESOLUTIONS_FILE).map_err(|e| read_err(e.to_string()))?;
        let r: Resolutions = toml::from_str(&text)
            .map_err(|e| ResolutionError::Parse { path: shown.clone(), reason: clip(&e.to_string()) })?;
        r.validate().map_err(|reason| ResolutionError::Parse { path: shown.clone(), reason: clip(&reason) })?;
        Ok(r)
    }

    /// The file's item decisions that no conflict of `conflicts` used: a node that does not exist or
    /// does not have that conflict (a typo in a node id decides nothing, and must say so). Not the
    /// BMC check's codes: what a BMC said comes and goes (a password fixed since, a run without
    /// `--check-bmc`), so a decision about it may find nothing to decide.
    pub fn unmatched(&self, conflicts: &[Conflict]) -> Vec<String> {
        self.decisions
            .iter()
            .enumerate()
            .filter(|(_, d)| !d.code.read_from_bmcs())
            .filter(|(_, d)| {
                !conflicts.iter().any(|c| {
                    c.code == d.code
                        && match &c.subject {
                            Subject::Node { nova_bm_id } => d.node == Some(*nova_bm_id) && d.interface.is_none(),
                            Subject::Interface { nova_bm_id, interface_id } => {
                                d.interface == Some(*interface_id)
                                    || (d.interface.is_none() && d.node == Some(*nova_bm_id))
                            }
                            Subject::Host { host } => d.host.as_deref() == Some(host),
                            Subject::Run => d.node.is_none() && d.interface.is_none() && d.host.is_none(),
                        }
                })
            })
            .map(|(i, d)| format!("[[decision]] #{} ({})", i + 1, describe(d)))
            .collect()
    }

    pub fn to_toml(&self) -> String {
        let header =
            "# bm2ironic resolutions: decisions about conflicts, replayed with `migrate --resolutions FILE`.\n\n";
        header.to_string() + &toml::to_string_pretty(self).unwrap_or_default()
    }

    fn validate(&self) -> Result<(), String> {
        for (code, action) in &self.defaults {
            check_code_wide(*code, *action).map_err(|e| format!("[defaults] {code}: {e}"))?;
        }
        for (i, d) in self.decisions.iter().enumerate() {
            let at = format!("[[decision]] #{} ({})", i + 1, describe(d));
            check_action(d.code, d.action).map_err(|e| format!("{at}: {e}"))?;
            if d.node.is_none()
                && d.interface.is_none()
                && d.host.is_none()
                && d.code != ConflictCode::MissingDeployImages
            {
                return Err(format!("{at}: names no node, interface or host (use [defaults] for a whole code)"));
            }
            // the same item decided twice, differently: which one was meant?
            if let Some((j, other)) = self.decisions[..i]
                .iter()
                .enumerate()
                .find(|(_, o)| o.code == d.code && o.node == d.node && o.interface == d.interface && o.host == d.host)
            {
                if other.action != d.action {
                    return Err(format!("{at} contradicts [[decision]] #{} ({}): keep one", j + 1, describe(other)));
                }
            }
        }
        Ok(())
    }

    /// Adds `--resolve CODE=ACTION` (later flags win over files).
    pub fn add_flag(&mut self, given: &str) -> Result<(), ResolutionError> {
        let (code, action) = parse_flag(given)?;
        self.add_code_wide(code, action);
        Ok(())
    }

    /// A decision for every conflict of `code`, from `--resolve` (already checked by [`parse_flag`]).
    pub fn add_code_wide(&mut self, code: ConflictCode, action: Action) {
        self.defaults.insert(code, action);
        self.flag_codes.insert(code);
    }

    /// The decision for a conflict: a decision about this very item, else the code's default.
    pub fn decide(&self, code: ConflictCode, subject: &Subject) -> Option<(Action, &'static str)> {
        let item = self.decisions.iter().rev().find(|d| {
            d.code == code
                && match subject {
                    Subject::Node { nova_bm_id } => d.node == Some(*nova_bm_id) && d.interface.is_none(),
                    Subject::Interface { nova_bm_id, interface_id } => {
                        d.interface == Some(*interface_id) || (d.interface.is_none() && d.node == Some(*nova_bm_id))
                    }
                    Subject::Host { host } => d.host.as_deref() == Some(host),
                    Subject::Run => d.node.is_none() && d.interface.is_none() && d.host.is_none(),
                }
        });
        if let Some(d) = item {
            return Some((d.action, if d.by_key { "key" } else { "resolutions" }));
        }
        let by = if self.keyed_codes.contains(&code) {
            "key"
        } else if self.flag_codes.contains(&code) {
            "resolve"
        } else {
            "resolutions"
        };
        self.defaults.get(&code).map(|a| (*a, by))
    }

    /// Records a decision about one item (the wizard's "this one", made with a key).
    pub fn decide_item(&mut self, code: ConflictCode, subject: &Subject, action: Action) {
        let (node, interface, host) = match subject {
            Subject::Node { nova_bm_id } => (Some(*nova_bm_id), None, None),
            Subject::Interface { nova_bm_id, interface_id } => (Some(*nova_bm_id), Some(*interface_id), None),
            Subject::Host { host } => (None, None, Some(host.clone())),
            Subject::Run => (None, None, None),
        };
        self.decisions.retain(|d| !(d.code == code && d.node == node && d.interface == interface && d.host == host));
        self.decisions.push(Decision { code, node, interface, host, action, by_key: true });
    }
}

/// `code = mid-deploy, node = 4, action = maintenance`: a decision as the operator wrote it.
fn describe(d: &Decision) -> String {
    let mut parts = vec![format!("code = {}", d.code)];
    if let Some(n) = d.node {
        parts.push(format!("node = {n}"));
    }
    if let Some(i) = d.interface {
        parts.push(format!("interface = {i}"));
    }
    if let Some(h) = &d.host {
        parts.push(format!("host = {h}"));
    }
    parts.push(format!("action = {}", d.action));
    parts.join(", ")
}

/// A decision for every conflict of a code (`--resolve`, `[defaults]`): `keep-instance` names the one
/// claimant that runs an instance, so given for all of them it could only contradict itself.
fn check_code_wide(code: ConflictCode, action: Action) -> Result<(), String> {
    check_action(code, action)?;
    if action == Action::KeepInstance {
        return Err(format!(
            "{action} names the one claimant that runs the instance: decide it per node in a resolutions file \
             ([[decision]] code = \"{code}\", node = ID, action = \"{action}\"), not for every {code}"
        ));
    }
    Ok(())
}

fn check_action(code: ConflictCode, action: Action) -> Result<(), String> {
    if code.actions().contains(&action) {
        Ok(())
    } else if code.actions().is_empty() {
        Err(format!("{code} has no action: fix its cause (see `bm2ironic plan`)"))
    } else {
        Err(format!(
            "'{action}' is not an action of {code} (allowed: {})",
            code.actions().iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", ")
        ))
    }
}

crate::core::kind::always!(Usage: ResolutionError); // the operator's decisions (--resolve, --resolutions FILE)

/// A `--resolve CODE=ACTION` flag: a known code, one of its actions, and an action that may be
/// decided for every conflict of the code at once.
pub fn parse_flag(given: &str) -> Result<(ConflictCode, Action), ResolutionError> {
    let err = |reason: String| ResolutionError::Flag { given: given.to_string(), reason };
    let (code, action) =
        given.split_once('=').ok_or_else(|| err("expected CODE=ACTION, e.g. duplicate-mac=skip-port".into()))?;
    let code: ConflictCode = code.trim().parse().map_err(err)?;
    let action: Action = action.trim().parse().map_err(err)?;
    check_code_wide(code, action).map_err(err)?;
    Ok((code, action))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_match_the_contract() {
        for c in ConflictCode::ALL {
            assert_eq!(c.as_str().parse::<ConflictCode>().unwrap(), *c);
            if !c.blocking() {
                assert!(c.default_action().is_some(), "{c} is non-blocking and needs a default");
            }
        }
        assert_eq!(ConflictCode::ALL.len(), 33);
        assert!(ConflictCode::DuplicateBmc.blocking() && !ConflictCode::BmcRefused.blocking());
        assert!(ConflictCode::DuplicateMac.blocking());
        // keep-instance is per node only
        let mut r = Resolutions::default();
        let e = r.add_flag("ambiguous-instance=keep-instance").unwrap_err().to_string();
        assert!(e.contains("decide it per node"), "{e}");
        assert!(r.add_flag("ambiguous-instance=free").is_ok());
        assert!(!ConflictCode::IncompleteProperties.blocking());
    }

    #[test]
    fn resolve_flag_checks_the_action() {
        let mut r = Resolutions::default();
        r.add_flag("duplicate-mac=skip-port").unwrap();
        assert!(r.add_flag("duplicate-mac=replace").unwrap_err().to_string().contains("allowed: skip-port, skip"));
        assert!(r.add_flag("no-such-code=skip").is_err());
        assert!(r.add_flag("missing-deploy-images=skip").unwrap_err().to_string().contains("no action"));
        assert_eq!(
            r.decide(ConflictCode::DuplicateMac, &Subject::Node { nova_bm_id: 1 }),
            Some((Action::SkipPort, "resolve"))
        );
    }

    #[test]
    fn item_decisions_win_over_code_defaults_and_survive_toml() {
        let mut r = Resolutions::default();
        r.add_flag("mid-deploy=skip").unwrap();
        r.decide_item(ConflictCode::MidDeploy, &Subject::Node { nova_bm_id: 4 }, Action::Maintenance);
        let text = r.to_toml();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.toml");
        std::fs::write(&p, &text).unwrap();
        let back = Resolutions::load(&p).unwrap();
        assert_eq!((&back.defaults, &back.decisions), (&r.defaults, &r.decisions), "{text}");
        assert_eq!(
            back.decide(ConflictCode::MidDeploy, &Subject::Node { nova_bm_id: 4 }).unwrap().0,
            Action::Maintenance
        );
        assert_eq!(back.decide(ConflictCode::MidDeploy, &Subject::Node { nova_bm_id: 5 }).unwrap().0, Action::Skip);
    }

    #[test]
    fn bad_resolutions_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.toml");
        std::fs::write(&p, "[defaults]\nmid-deploy = \"free\"\n").unwrap();
        let e = Resolutions::load(&p).unwrap_err().to_string();
        assert!(e.contains("r.toml") && e.contains("'free' is not an action of mid-deploy"), "{e}");
    }

    fn load_text(text: &str) -> Result<Resolutions, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.toml");
        std::fs::write(&p, text).unwrap();
        Resolutions::load(&p).map_err(|e| e.to_string())
    }

    #[test]
    fn hostile_resolutions_files_are_refused_with_the_place() {
        // a typo in a section or key
        let e = load_text("[default]\nmid-deploy = \"skip\"\n").unwrap_err();
        assert!(e.contains("default") && e.contains("line 1"), "{e}");
        let e = load_text("[[decision]]\ncode = \"mid-deploy\"\nnodes = 4\naction = \"skip\"\n").unwrap_err();
        assert!(e.contains("nodes") && e.contains("line 3"), "{e}");
        // a missing action names the decision's table, not line 1 column 1
        let e = load_text("[defaults]\n\n[[decision]]\ncode = \"mid-deploy\"\nnode = 4\n").unwrap_err();
        assert!(e.contains("action") && !e.contains("line 1, column 1"), "{e}");
        // the same item decided twice, differently
        let e = load_text(
            "[[decision]]\ncode = \"mid-deploy\"\nnode = 4\naction = \"skip\"\n\
             [[decision]]\ncode = \"mid-deploy\"\nnode = 4\naction = \"maintenance\"\n",
        )
        .unwrap_err();
        assert!(e.contains("#2") && e.contains("contradicts") && e.contains("#1"), "{e}");
        // a huge value is not echoed
        let e = load_text(&format!("[defaults]\nmid-deploy = \"{}\"\n", "x".repeat(200_000))).unwrap_err();
        assert!(e.len() < 2000, "{} bytes", e.len());
        // not a file, or far too big
        let e = Resolutions::load(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = load_text(&"# x\n".repeat(400_000)).unwrap_err();
        assert!(e.contains("1600000 bytes, over the 1 MiB bound"), "{e}");
        // a FIFO: refused at once (opening it waited for a writer for ever)
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("r.toml");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = Resolutions::load(&fifo).unwrap_err().to_string();
        assert!(e.contains("a FIFO (named pipe)"), "{e}");
        // a leading byte order mark (Notepad writes one) is allowed, as TOML 1.1 allows it
        let r = load_text("\u{feff}[defaults]\nduplicate-mac = \"skip-port\"\n").unwrap();
        assert_eq!(r.defaults.get(&ConflictCode::DuplicateMac), Some(&Action::SkipPort));
    }

    #[test]
    fn decisions_that_match_nothing_are_named_and_decided_by_is_truthful() {
        let r = load_text(
            "[defaults]\nduplicate-mac = \"skip-port\"\n[[decision]]\ncode = \"mid-deploy\"\nnode = 99\naction = \"skip\"\n",
        )
        .unwrap();
        let conflict = Conflict {
            code: ConflictCode::MidDeploy,
            blocking: true,
            subject: Subject::Node { nova_bm_id: 4 },
            node_uuid: None,
            detail: String::new(),
            action: None,
            decided_by: None,
        };
        let unmatched = r.unmatched(std::slice::from_ref(&conflict));
        assert_eq!(unmatched, vec!["[[decision]] #1 (code = mid-deploy, node = 99, action = skip)".to_string()]);
        // a BMC's finding fixed since (or a run without --check-bmc): its decision is no typo
        let bmc = "[[decision]]\ncode = \"bmc-refused\"\nnode = 99\naction = \"maintenance\"\n";
        assert!(load_text(bmc).unwrap().unmatched(&[conflict]).is_empty());
        assert_eq!(r.decide(ConflictCode::DuplicateMac, &Subject::Node { nova_bm_id: 1 }).unwrap().1, "resolutions");
        let mut r = r;
        r.add_flag("duplicate-mac=skip").unwrap();
        assert_eq!(r.decide(ConflictCode::DuplicateMac, &Subject::Node { nova_bm_id: 1 }).unwrap().1, "resolve");
    }
}
