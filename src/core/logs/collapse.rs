//! Repeated log records collapsed: the same source, logger, level and message once temporary paths,
//! request ids and numbers are masked ([`mask`]) make one [`Collapsed`] entry with a count and the
//! first and last time; [`Collapsed::rank`] says which entry tells most (an error before a retry).

use std::sync::OnceLock;

use chrono::NaiveDateTime;
use regex::{Captures, Regex};
use serde::Serialize;

use super::oslo::LogLevel;
use super::watch::Record;

fn mask_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"(?i)(?P<req>\breq-[0-9a-f-]{8,})",
            r"|(?P<uuid>\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b)",
            r"|(?P<path>(?:/[\w.+-]+)+/?)",
            r"|(?P<hex>\b0x[0-9a-f]+\b)",
            r"|(?P<num>\d+)"
        ))
        .expect("mask regex")
    })
}

/// The message with what differs between repeats of one event masked: request ids (`req-*`),
/// temporary files (any path with a component starting `tmp`, as `<tmp>`), hex and decimal
/// numbers (`#`). Node uuids stay: they say which node a record is about.
pub fn mask(message: &str) -> String {
    mask_re()
        .replace_all(message, |c: &Captures| {
            if c.name("req").is_some() {
                "req-*".to_string()
            } else if let Some(u) = c.name("uuid") {
                u.as_str().to_ascii_lowercase()
            } else if let Some(p) = c.name("path") {
                let p = p.as_str();
                if p.split('/').any(|part| part.to_ascii_lowercase().starts_with("tmp")) {
                    "<tmp>".to_string()
                } else {
                    digits().replace_all(p, "#").into_owned()
                }
            } else {
                "#".to_string()
            }
        })
        .into_owned()
}

fn digits() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\d+").expect("digits regex"))
}

fn retry_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?i)\bretry(ing)?\b|\bwill retry\b").expect("retry regex"))
}

/// Identical records, once: the first one's text, how many, when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Collapsed {
    pub source: String,
    #[serde(serialize_with = "ser_level")]
    pub level: LogLevel,
    pub logger: String,
    pub category: Option<String>,
    pub takeover_error: bool,
    /// the first record's message, as written
    pub message: String,
    /// what the failed command printed on stderr (from the record's continuation lines), when it says
    pub detail: Option<String>,
    pub count: usize,
    pub first: Option<NaiveDateTime>,
    pub last: Option<NaiveDateTime>,
    #[serde(skip)]
    key: String,
}

fn ser_level<S: serde::Serializer>(l: &LogLevel, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(l.as_str())
}

/// The stderr a failed command left in an oslo `ProcessExecutionError` (`Stderr: '...\n'`), when
/// it is not empty.
fn stderr_detail(r: &Record) -> Option<String> {
    r.traceback.iter().chain(std::iter::once(&r.message)).find_map(|l| {
        let rest = l.trim_start().strip_prefix("Stderr: '")?;
        let end = rest.find("\\n'").or_else(|| rest.find('\''))?;
        let text = rest[..end].replace("\\n", "; ").trim().to_string();
        (!text.is_empty()).then_some(text)
    })
}

impl Collapsed {
    fn key_of(r: &Record) -> String {
        format!("{}\u{0}{}\u{0}{}\u{0}{}", r.source, r.logger, r.level.as_str(), mask(&r.message))
    }

    pub fn new(r: &Record) -> Collapsed {
        Collapsed {
            source: r.source.clone(),
            level: r.level,
            logger: r.logger.clone(),
            category: r.category.clone(),
            takeover_error: r.takeover_error,
            message: r.message.clone(),
            detail: stderr_detail(r),
            count: 1,
            first: r.time,
            last: r.time,
            key: Collapsed::key_of(r),
        }
    }

    /// A record that says the operation will be tried again (not yet the failure).
    pub fn is_retry(&self) -> bool {
        retry_re().is_match(&self.message)
    }

    /// How much an entry tells about its node, higher first: a takeover error before anything
    /// else, then the level, then the final failure before a retry.
    pub fn rank(&self) -> (bool, LogLevel, bool) {
        (self.takeover_error, self.level, !self.is_retry())
    }

    /// One line for a reason: `category: message (stderr)`.
    pub fn summary(&self) -> String {
        let mut s = format!("{}: {}", self.category.as_deref().unwrap_or("log"), self.message.trim());
        if let Some(d) = &self.detail {
            s.push_str(&format!(" ({d})"));
        }
        s
    }
}

/// Adds `r` to `list`: counted into the entry it repeats, or appended as a new one.
pub fn add(list: &mut Vec<Collapsed>, r: &Record) {
    let key = Collapsed::key_of(r);
    match list.iter_mut().find(|c| c.key == key) {
        Some(c) => {
            c.count += 1;
            if r.time.is_some() {
                c.first = c.first.min(r.time).or(r.time);
                c.last = c.last.max(r.time);
            }
            if c.detail.is_none() {
                c.detail = stderr_detail(r);
            }
        }
        None => list.push(Collapsed::new(r)),
    }
}

/// `records` collapsed, in the order of their first appearance.
pub fn collapse<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<Collapsed> {
    let mut out = Vec::new();
    for r in records {
        add(&mut out, r);
    }
    out
}

/// The entries most specific first ([`Collapsed::rank`]), then by first appearance.
pub fn sort_most_specific(list: &mut [Collapsed]) {
    list.sort_by(|a, b| b.rank().cmp(&a.rank()).then(a.first.cmp(&b.first)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    use crate::core::logs::watch::{finish, Patterns, RecordBuilder};

    fn records(text: &str) -> Vec<Record> {
        let mut b = RecordBuilder::new("ironic");
        let mut out: Vec<Record> = text.lines().filter_map(|l| b.push(l)).collect();
        out.extend(b.flush());
        out.into_iter().map(|r| finish(r, &Patterns::default_set(), &HashSet::new())).collect()
    }

    #[test]
    fn masks_what_differs_between_repeats() {
        assert_eq!(
            mask("retrying \"ipmitool -p 16593 -f /tmp/tmph7ub9wob power status\" for node BBBBBBBB-0000-4000-8000-000000000004 req-0bad1dea-1234-5678"),
            "retrying \"ipmitool -p # -f <tmp> power status\" for node bbbbbbbb-0000-4000-8000-000000000004 req-*"
        );
        assert_eq!(
            mask("attempt 2 of 3, took 0x1f ms at /var/lib/ironic/x1.conf"),
            "attempt # of #, took # ms at /var/lib/ironic/x#.conf"
        );
        assert_eq!(mask("/var/tmp/abc/def and /tmpfs9/x"), "<tmp> and <tmp>");
    }

    #[test]
    fn identical_records_collapse_with_count_and_times() {
        let node = "bbbbbbbb-0000-4000-8000-000000000004";
        let other = "bbbbbbbb-0000-4000-8000-000000000005";
        let mut text = String::new();
        for (i, (tmp, req, n)) in [
            ("tmph7ub9wob", "req-f3f21f15-787f", node),
            ("tmpow2ax60j", "req-94b16fe0-8166", node),
            ("tmp7wrubbq6", "req-0000aaaa-1111", node),
            ("tmpzzzz", "req-0000aaaa-2222", other),
        ]
        .iter()
        .enumerate()
        {
            text.push_str(&format!(
                "2026-11-30 18:02:4{i}.453 26765 WARNING ironic.drivers.modules.ipmitool [None {req} - - - - - -] IPMI Error encountered, retrying \"ipmitool -I lanplus -H 127.0.0.1 -p 1659{i} -f /tmp/{tmp} power status\" for node {n}. Error: Unexpected error while running command.\nCommand: ipmitool -f /tmp/{tmp} power status\nExit code: 1\nStdout: ''\nStderr: 'Error: Unable to establish IPMI v2 / RMCP+ session\\n': oslo_concurrency.processutils.ProcessExecutionError: Unexpected error while running command.\n"
            ));
        }
        text.push_str(&format!("2026-11-30 18:02:57.034 26765 ERROR ironic.drivers.modules.ipmitool [None req-f3f21f15-787f - - - - - -] IPMI Error while attempting \"ipmitool -f /tmp/tmp3kb_giwr power status\" for node {node}. Error: Unexpected error while running command.\n"));
        text.push_str(&format!("2026-11-30 18:02:57.035 26765 WARNING ironic.conductor.manager [None req-f3f21f15-787f - - - - - -] During sync_power_state, could not get power state for node {node}, attempt 1 of 2. Error: IPMI call failed: power status.\n"));
        text.push_str(&format!("2026-11-30 18:03:57.035 26765 WARNING ironic.conductor.manager [None req-aaaaaaaa-bbbb - - - - - -] During sync_power_state, could not get power state for node {node}, attempt 2 of 2. Error: IPMI call failed: power status.\n"));
        let recs = records(&text);
        assert_eq!(recs.len(), 7);
        let mut c = collapse(&recs);
        assert_eq!(c.len(), 4, "{c:#?}");
        let retry = &c[0];
        assert_eq!(retry.count, 3, "temporary files, request ids and ports differ, the node is the same");
        assert_eq!(retry.first.unwrap().to_string(), "2026-11-30 18:02:40.453");
        assert_eq!(retry.last.unwrap().to_string(), "2026-11-30 18:02:42.453");
        assert!(retry.message.contains("/tmp/tmph7ub9wob"), "the first record's text is kept");
        assert_eq!(retry.detail.as_deref(), Some("Error: Unable to establish IPMI v2 / RMCP+ session"));
        assert!(retry.is_retry());
        assert_eq!(c[1].count, 1, "another node's record stays apart");
        assert_eq!(c[3].count, 2, "attempt counters are masked");
        assert!(c.iter().all(|c| c.takeover_error), "the built-in patterns call each a takeover error: {c:#?}");
        assert_eq!(retry.category.as_deref(), Some("bmc-error"));
        sort_most_specific(&mut c);
        assert_eq!(c[0].level, LogLevel::Error, "the error comes before the retry");
        assert!(c[0].message.starts_with("IPMI Error while attempting"));
        assert!(c[1].message.starts_with("During sync_power_state"), "a final warning before a retry");
        assert!(c.last().unwrap().is_retry());
    }
}
