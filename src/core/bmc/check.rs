//! The check itself: each live node's BMC read once through ipmitool (`ipmitool.rs`), at most
//! `concurrency` BMCs at once, one session per BMC at a time (nodes that share a `pm_address` are
//! read one after the other, and once per distinct user and password), each read killed at
//! `timeout`. Never a power action: only `ipmitool::Read`'s two reads exist. Progress goes to a
//! callback; the audit log gets every reading (no password). docs/commands.md, "plan --check-bmc".

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::StreamExt;

use super::facts::{address_key, BmcFacts, BmcReading, Failure};
use super::ipmitool::{self, Read};
use crate::core::db::secret::Secret;
use crate::core::source::model::Inventory;

/// What is told of the check's progress.
pub type OnProgress = std::sync::Arc<dyn Fn(Progress) + Send + Sync>;

/// How the check runs.
#[derive(Clone)]
pub struct CheckOptions {
    /// BMCs read at once at most
    pub concurrency: usize,
    /// how long one node's reads may take before ipmitool is killed
    pub timeout: Duration,
    /// the ipmitool to run
    pub ipmitool: PathBuf,
    /// nova.conf's power manager is IPMI (anything else is not read)
    pub ipmi: bool,
    /// told after each BMC
    pub progress: OnProgress,
}

impl std::fmt::Debug for CheckOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let CheckOptions { concurrency, timeout, ipmitool, ipmi, progress: _ } = self;
        write!(
            f,
            "CheckOptions {{ concurrency: {concurrency}, timeout: {timeout:?}, ipmitool: {ipmitool:?}, ipmi: {ipmi} }}"
        )
    }
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions {
            concurrency: 32,
            timeout: Duration::from_secs(10),
            ipmitool: "ipmitool".into(),
            ipmi: true,
            progress: std::sync::Arc::new(|_| {}),
        }
    }
}

/// How far the check is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
}

/// One BMC (one `pm_address`) and the nodes that name it: (nova_bm id, user, password).
struct Bmc {
    address: String,
    nodes: Vec<(i64, String, Secret)>,
}

/// Reads every live node's BMC of `inv`. Err: ipmitool cannot be run at all.
pub async fn check(
    inv: &Inventory,
    opts: &CheckOptions,
    progress: &(dyn Fn(Progress) + Send + Sync),
) -> Result<BmcFacts, String> {
    let mut facts = BmcFacts {
        given: true,
        started_at: Some(Utc::now()),
        concurrency: opts.concurrency.max(1),
        timeout_ms: opts.timeout.as_millis() as u64,
        ..Default::default()
    };
    let bmcs = bmcs_of(inv, opts, &mut facts);
    if !bmcs.is_empty() {
        runnable(opts).await?;
    }
    let total = bmcs.len();
    progress(Progress { done: 0, total });
    let (in_flight, peak) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let mut reads =
        futures::stream::iter(bmcs).map(|b| read_bmc(b, opts, (&in_flight, &peak))).buffer_unordered(facts.concurrency);
    let mut done = 0;
    while let Some(readings) = reads.next().await {
        done += 1;
        progress(Progress { done, total });
        facts.readings.extend(readings);
    }
    drop(reads);
    facts.peak_in_flight = peak.load(Ordering::SeqCst);
    facts.finished_at = Some(Utc::now());
    facts.find_duplicates();
    tracing::info!(bmcs = total, nodes = facts.readings.len(), peak = facts.peak_in_flight, "BMC check done");
    Ok(facts)
}

/// The BMCs to read, by `pm_address`; what is not read goes to `facts` (not read, or a reading of
/// an address no ipmitool can use).
fn bmcs_of(inv: &Inventory, opts: &CheckOptions, facts: &mut BmcFacts) -> Vec<Bmc> {
    let mut by_key: BTreeMap<String, Bmc> = BTreeMap::new();
    for n in inv.nodes.iter().map(|e| &e.node).filter(|n| !n.deleted) {
        let address = n.pm_address.clone().unwrap_or_default();
        if !opts.ipmi {
            facts.not_read.insert(n.id, "nova.conf's power manager is not IPMI".into());
        } else if address.trim().is_empty() {
            facts.not_read.insert(n.id, "no pm_address (missing-bmc)".into());
        } else if let Some(why) = ipmitool::unusable_address(&address) {
            let user = n.pm_user.clone().unwrap_or_default();
            let r = failed(&address, &user, Failure::NoAnswer, format!("not asked: {why}"), Instant::now());
            facts.readings.insert(n.id, r);
        } else {
            let user = n.pm_user.clone().unwrap_or_default();
            let bmc = by_key.entry(address_key(&address)).or_insert_with(|| Bmc { address, nodes: vec![] });
            bmc.nodes.push((n.id, user, n.pm_password.clone().unwrap_or_default()));
        }
    }
    by_key.into_values().collect()
}

/// ipmitool answers `-V`.
async fn runnable(opts: &CheckOptions) -> Result<(), String> {
    let out = tokio::process::Command::new(&opts.ipmitool).arg("-V").stdin(Stdio::null()).output().await;
    match out {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!("{} -V failed: {}", opts.ipmitool.display(), String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("cannot run {} for the BMC check: {e} (install ipmitool)", opts.ipmitool.display())),
    }
}

/// One BMC's nodes, one session at a time; a node whose user and password were read already takes
/// that reading.
async fn read_bmc(
    b: Bmc,
    opts: &CheckOptions,
    (in_flight, peak): (&AtomicUsize, &AtomicUsize),
) -> Vec<(i64, BmcReading)> {
    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    peak.fetch_max(now, Ordering::SeqCst);
    let mut out: Vec<(i64, BmcReading)> = Vec::new();
    let mut read: Vec<(String, Secret, BmcReading)> = Vec::new();
    for (id, user, password) in b.nodes {
        let r = match read.iter().find(|(u, p, _)| *u == user && *p == password) {
            Some((_, _, r)) => r.clone(),
            None => {
                let r = read_node(&b.address, &user, &password, opts).await;
                read.push((user, password, r.clone()));
                r
            }
        };
        tracing::info!(node = id, address = %r.address, power = ?r.power, failure = ?r.failure, error = ?r.error, "BMC read");
        out.push((id, r));
    }
    in_flight.fetch_sub(1, Ordering::SeqCst);
    out
}

/// Power status, then (when it answered) the system GUID; within `opts.timeout` together.
async fn read_node(address: &str, user: &str, password: &Secret, opts: &CheckOptions) -> BmcReading {
    let started = Instant::now();
    let deadline = started + opts.timeout;
    let power = match run(address, user, password, Read::PowerStatus, opts, deadline).await {
        Ok(stdout) => ipmitool::parse_power(&stdout),
        Err((failure, error)) => return failed(address, user, failure, error, started),
    };
    let Some(power) = power else {
        return failed(address, user, Failure::Other, "power status gave no power state".into(), started);
    };
    // a BMC that answers power status but not GUID is no finding: its identity stays unknown
    let guid = run(address, user, password, Read::SystemGuid, opts, deadline)
        .await
        .ok()
        .and_then(|o| ipmitool::parse_guid(&o));
    BmcReading {
        address: address.into(),
        user: user.into(),
        power: Some(power),
        guid,
        failure: None,
        error: None,
        read_at: Utc::now(),
        ms: started.elapsed().as_millis() as u64,
    }
}

fn failed(address: &str, user: &str, failure: Failure, error: String, started: Instant) -> BmcReading {
    BmcReading {
        address: address.into(),
        user: user.into(),
        power: None,
        guid: None,
        failure: Some(failure),
        error: Some(error),
        read_at: Utc::now(),
        ms: started.elapsed().as_millis() as u64,
    }
}

/// One ipmitool read: its stdout, or why it failed (the password scrubbed from what it said).
async fn run(
    address: &str,
    user: &str,
    password: &Secret,
    read: Read,
    opts: &CheckOptions,
    deadline: Instant,
) -> Result<String, (Failure, String)> {
    let mut cmd = tokio::process::Command::new(&opts.ipmitool);
    cmd.args(ipmitool::args(address, Some(user), read, ipmitool::tries_within(opts.timeout)))
        .env("IPMI_PASSWORD", password.expose())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let left = deadline.saturating_duration_since(Instant::now());
    let secs = opts.timeout.as_secs_f64();
    match tokio::time::timeout(left, cmd.output()).await {
        Err(_) => Err((Failure::NoAnswer, format!("no answer within {secs:.1} s (ipmitool stopped)"))),
        Ok(Err(e)) => Err((Failure::Other, format!("cannot run ipmitool: {e}"))),
        Ok(Ok(o)) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(Ok(o)) => {
            let text = password.scrub(&ipmitool::error_text(&String::from_utf8_lossy(&o.stderr)));
            Err((ipmitool::classify(&text), text))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::bmc::Power;
    use crate::core::source::model::{BmNode, InventoryNode};

    fn node(id: i64, address: Option<&str>, deleted: bool) -> InventoryNode {
        let node = BmNode {
            id,
            deleted,
            pm_address: address.map(str::to_string),
            pm_user: Some("admin".into()),
            pm_password: Some(Secret::new(format!("pw-{id}"))),
            ..Default::default()
        };
        InventoryNode { node, interfaces: vec![] }
    }

    /// One session per BMC: the nodes that name one address (case and blanks aside) are one BMC,
    /// read one after the other; what is not read says why; an address ipmitool cannot take is a
    /// reading without a question.
    #[test]
    fn nodes_of_one_address_are_one_bmc_and_the_rest_say_why() {
        let inv = Inventory {
            nodes: vec![
                node(1, Some("BMC-1.example"), false),
                node(2, Some(" bmc-1.example "), false),
                node(3, Some("10.0.0.3"), false),
                node(4, Some(""), false),
                node(5, Some("10.0.0.5"), true),
                node(6, Some("-oX"), false),
            ],
            orphan_interfaces: vec![],
        };
        let mut facts = BmcFacts::default();
        let bmcs = bmcs_of(&inv, &CheckOptions::default(), &mut facts);
        let grouped: Vec<(String, Vec<i64>)> =
            bmcs.iter().map(|b| (b.address.clone(), b.nodes.iter().map(|n| n.0).collect())).collect();
        assert_eq!(grouped, [("10.0.0.3".to_string(), vec![3]), ("BMC-1.example".to_string(), vec![1, 2])]);
        assert_eq!(facts.not_read.keys().copied().collect::<Vec<_>>(), [4], "deleted nodes are not read at all");
        let r = &facts.readings[&6];
        assert_eq!(r.failure, Some(Failure::NoAnswer));
        assert!(r.error.as_deref().unwrap().starts_with("not asked: pm_address '-oX' begins with '-'"), "{r:?}");
        let mut none = BmcFacts::default();
        let not_ipmi = CheckOptions { ipmi: false, ..CheckOptions::default() };
        assert!(bmcs_of(&inv, &not_ipmi, &mut none).is_empty());
        assert_eq!(none.not_read.len(), 5, "every live node, and why: {:?}", none.not_read);
    }

    /// An ipmitool that records its arguments, its environment's password and how many of it run
    /// at once, answers `mc guid` and `power status` after 100 ms, and hangs for address `slow`.
    fn fake_ipmitool(dir: &std::path::Path) -> PathBuf {
        let script = dir.join("ipmitool");
        let text = r#"#!/bin/sh
[ "$1" = "-V" ] && exit 0
D="$(dirname "$0")"
echo "$* | env:$IPMI_PASSWORD" >> "$D/calls"
case "$*" in *" -H slow "*) exec sleep 30;; esac
touch "$D/run.$$"; ls "$D" | grep -c '^run\.' >> "$D/running"
sleep 0.1; rm -f "$D/run.$$"
case "$*" in *"mc guid"*) echo "System GUID  : 11111111-2222-3333-4444-555555555555";; *) echo "Chassis Power is on";; esac
"#;
        std::fs::write(&script, text).unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        script
    }

    /// The bound seen from outside (ipmitool processes alive at once), the timeout, and the
    /// password in the environment only, never among the arguments.
    #[tokio::test(flavor = "multi_thread")]
    async fn at_most_the_bound_at_once_killed_at_the_timeout_and_no_password_on_argv() {
        let dir = tempfile::tempdir().unwrap();
        let ipmitool = fake_ipmitool(dir.path());
        let mut nodes: Vec<InventoryNode> = (1..=12).map(|id| node(id, Some(&format!("bmc-{id}")), false)).collect();
        nodes.push(node(13, Some("slow"), false));
        let inv = Inventory { nodes, orphan_interfaces: vec![] };
        let opts =
            CheckOptions { concurrency: 3, timeout: Duration::from_secs(1), ipmitool, ..CheckOptions::default() };
        let seen = std::sync::Mutex::new(Vec::new());
        let facts = check(&inv, &opts, &|p| seen.lock().unwrap().push(p.done)).await.unwrap();
        assert_eq!(*seen.lock().unwrap(), (0..=13).collect::<Vec<_>>(), "progress after each BMC");
        let at_once: usize = std::fs::read_to_string(dir.path().join("running"))
            .unwrap()
            .lines()
            .map(|l| l.trim().parse::<usize>().unwrap())
            .max()
            .unwrap();
        assert!(
            at_once <= 3 && facts.peak_in_flight <= 3,
            "{at_once} ipmitools, {} BMCs at once",
            facts.peak_in_flight
        );
        assert!(at_once >= 2, "the bound is used: {at_once}");
        assert_eq!(facts.readings[&1].power, Some(Power::On));
        assert_eq!(facts.readings[&1].guid.as_deref(), Some("11111111-2222-3333-4444-555555555555"));
        let slow = &facts.readings[&13];
        assert_eq!(slow.failure, Some(Failure::NoAnswer));
        assert!(slow.error.as_deref().unwrap().starts_with("no answer within 1.0 s"), "{slow:?}");
        assert!(slow.ms < 5000, "killed at the timeout, not after ipmitool's sleep: {} ms", slow.ms);
        let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
        for line in calls.lines() {
            let (argv, env) = line.split_once(" | env:").unwrap();
            assert!(!argv.contains("pw-") && env.starts_with("pw-"), "{line}");
            assert!(argv.ends_with("power status") || argv.ends_with("mc guid"), "only reads: {line}");
        }
    }
}
