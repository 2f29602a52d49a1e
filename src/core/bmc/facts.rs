//! What the BMC check read (docs/commands.md, "plan --check-bmc"): one reading per node, when it
//! was read, and which nodes' BMCs answer as one machine. Plain data: the plan consults it without
//! I/O, the run report and `plan --json` show it. No password is ever held here.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

/// The chassis power a BMC reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Power {
    On,
    Off,
}

/// Why a BMC gave no power state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Failure {
    /// nothing answered (no route, nothing listening, a name that does not resolve, the timeout)
    NoAnswer,
    /// it answered and refused the user or password
    Credentials,
    /// it refused the ADMINISTRATOR privilege level Ironic asks for
    Privilege,
    /// it offered no cipher suite or algorithm ipmitool accepts
    Cipher,
    /// anything else ipmitool said (its text is kept)
    Other,
}

impl Failure {
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::NoAnswer => "no answer",
            Failure::Credentials => "credentials refused",
            Failure::Privilege => "privilege refused",
            Failure::Cipher => "cipher refused",
            Failure::Other => "error",
        }
    }
}

/// One node's BMC, read once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BmcReading {
    /// `pm_address` as nova_bm holds it (and as Ironic's `ipmi_address` will)
    pub address: String,
    /// `pm_user`
    pub user: String,
    pub power: Option<Power>,
    /// the system GUID (`ipmitool mc guid`), when it answered with one
    pub guid: Option<String>,
    pub failure: Option<Failure>,
    /// ipmitool's own words when it failed (its error lines, any password scrubbed)
    pub error: Option<String>,
    pub read_at: DateTime<Utc>,
    /// how long this BMC's reads took
    pub ms: u64,
}

/// Everything one check read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BmcFacts {
    /// a check ran (no check: no BMC conflict is raised)
    pub given: bool,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    /// BMCs read at once at most, and the most that were
    pub concurrency: usize,
    pub peak_in_flight: usize,
    pub timeout_ms: u64,
    /// nova_bm node id -> its reading
    pub readings: BTreeMap<i64, BmcReading>,
    /// live nodes not read, and why (no address, a power manager that is not IPMI)
    pub not_read: BTreeMap<i64, String>,
    /// nova_bm node id -> why its BMC is another node's too (`duplicate-bmc`)
    pub duplicates: BTreeMap<i64, String>,
}

/// GUIDs that name no machine: all zeros or all ones, and the placeholder some boards ship with
/// (the same on every board of a batch: it would make every one of them a duplicate).
const PLACEHOLDER_GUIDS: [&str; 3] = [
    "00000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "03000200-0400-0500-0006-000700080009",
];

/// The key two `pm_address` values name one BMC by: trimmed, lower-case (host names ignore case).
pub fn address_key(address: &str) -> String {
    address.trim().to_ascii_lowercase()
}

impl BmcFacts {
    /// Fills `duplicates`: nodes whose BMC is one machine's, by the same `pm_address` (certain: one
    /// BMC), or by the same system GUID from different addresses (the BMC reached two ways; a
    /// placeholder GUID is no evidence).
    pub fn find_duplicates(&mut self) {
        let mut by_address: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        let mut by_guid: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for (id, r) in &self.readings {
            by_address.entry(address_key(&r.address)).or_default().push(*id);
            if let Some(g) = r.guid.as_deref().map(str::to_ascii_lowercase) {
                if !PLACEHOLDER_GUIDS.contains(&g.as_str()) {
                    by_guid.entry(g).or_default().push(*id);
                }
            }
        }
        let mut found: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        for (address, ids) in by_address.iter().filter(|(_, ids)| ids.len() > 1) {
            for id in ids {
                let others = list(ids.iter().filter(|o| *o != id));
                found.entry(*id).or_default().push(format!("same pm_address '{address}' as node(s) {others}"));
            }
        }
        for (guid, ids) in by_guid.iter().filter(|(_, ids)| ids.len() > 1) {
            let key = |i: &i64| self.readings.get(i).map(|r| address_key(&r.address));
            for id in ids {
                let elsewhere: Vec<&i64> = ids.iter().filter(|o| *o != id && key(o) != key(id)).collect();
                if !elsewhere.is_empty() {
                    let at = elsewhere
                        .iter()
                        .map(|o| format!("{o} at '{}'", self.readings[o].address))
                        .collect::<Vec<_>>()
                        .join(", ");
                    found
                        .entry(*id)
                        .or_default()
                        .push(format!("its BMC answers with system GUID {guid}, as node(s) {at}"));
                }
            }
        }
        self.duplicates = found.into_iter().map(|(id, why)| (id, why.join("; "))).collect();
    }
}

impl BmcFacts {
    /// One line: when it was read, how, and what it found (counts).
    pub fn summary(&self) -> String {
        let at = |t: Option<DateTime<Utc>>| t.map_or("-".into(), |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string());
        let count = |f: &dyn Fn(&BmcReading) -> bool| self.readings.values().filter(|r| f(r)).count();
        let on = count(&|r| r.power == Some(Power::On));
        let off = count(&|r| r.power == Some(Power::Off));
        let silent = count(&|r| r.failure == Some(Failure::NoAnswer));
        let refused = count(&|r| r.failure.is_some_and(|f| f != Failure::NoAnswer));
        format!(
            "BMC check read from {} to {}: {} node(s), at most {} BMC(s) at once (peak {}), {:.1} s each at most: {on} on, {off} off, {silent} no answer, {refused} refused; {} node(s) sharing a BMC; {} not read",
            at(self.started_at),
            at(self.finished_at),
            self.readings.len(),
            self.concurrency,
            self.peak_in_flight,
            self.timeout_ms as f64 / 1000.0,
            self.duplicates.len(),
            self.not_read.len(),
        )
    }
}

impl BmcReading {
    /// What it read, in a few words: `on`, `off`, or the failure and ipmitool's text.
    pub fn outcome(&self) -> String {
        match (self.power, self.failure) {
            (Some(Power::On), _) => "on".into(),
            (Some(Power::Off), _) => "off".into(),
            (None, Some(f)) => format!("{}: {}", f.as_str(), self.error.as_deref().unwrap_or("")),
            (None, None) => "-".into(),
        }
    }
}

fn list<'a>(ids: impl Iterator<Item = &'a i64>) -> String {
    ids.map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(address: &str, guid: Option<&str>) -> BmcReading {
        BmcReading {
            address: address.into(),
            user: "admin".into(),
            power: Some(Power::On),
            guid: guid.map(str::to_string),
            failure: None,
            error: None,
            read_at: Utc::now(),
            ms: 1,
        }
    }

    #[test]
    fn one_address_or_one_guid_from_two_addresses_is_one_machine() {
        let mut f = BmcFacts { given: true, ..Default::default() };
        f.readings.insert(1, reading("10.0.0.1", Some("11111111-2222-3333-4444-555555555555")));
        f.readings.insert(2, reading(" 10.0.0.1", Some("11111111-2222-3333-4444-555555555555")));
        f.readings.insert(3, reading("bmc-3", Some("11111111-2222-3333-4444-555555555555")));
        f.readings.insert(4, reading("bmc-4", Some("03000200-0400-0500-0006-000700080009")));
        f.readings.insert(5, reading("bmc-5", Some("03000200-0400-0500-0006-000700080009")));
        f.readings.insert(6, reading("bmc-6", None));
        f.find_duplicates();
        assert!(f.duplicates[&1].contains("same pm_address '10.0.0.1' as node(s) 2"), "{:?}", f.duplicates);
        assert!(f.duplicates[&1].contains("as node(s) 3 at 'bmc-3'"), "{:?}", f.duplicates);
        assert!(f.duplicates[&3].contains("node(s) 1 at '10.0.0.1', 2 at ' 10.0.0.1'"), "{:?}", f.duplicates);
        assert!(!f.duplicates.contains_key(&4) && !f.duplicates.contains_key(&6), "placeholders are no evidence");
    }
}
