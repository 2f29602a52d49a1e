//! The takeover watch: follows several oslo.log files (rotation and copytruncate survive, see
//! `super::follow`), reads each line with the oslo parser (`super::oslo`: time, pid, level, logger,
//! request id, message), joins tracebacks to their ERROR record, classifies records with the
//! patterns of `assets/takeover-patterns.toml` (or the operator's file), and names the node uuids a
//! record mentions, tied to the migrated nodes.

use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use chrono::NaiveDateTime;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::oslo::{self, parse_time, LogLevel};

pub const DEFAULT_PATTERNS: &str = include_str!("../../../assets/takeover-patterns.toml");

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("patterns file {path}: {reason}")]
    Patterns { path: String, reason: String },
    #[error("cannot read {path}: {reason}")]
    Read { path: String, reason: String },
}

#[derive(Debug, Deserialize)]
struct PatternFile {
    pattern: Vec<PatternSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PatternSpec {
    category: String,
    source: Option<String>,
    level: Option<String>,
    logger: Option<String>,
    message: Option<String>,
    #[serde(default)]
    takeover_error: bool,
}

#[derive(Debug, Clone)]
pub struct Pattern {
    pub category: String,
    source: Option<String>,
    level: Option<LogLevel>,
    logger: Option<String>,
    message: Option<Regex>,
    pub takeover_error: bool,
}

#[derive(Debug, Clone)]
pub struct Patterns(pub Vec<Pattern>);

impl Patterns {
    pub fn parse(text: &str, origin: &str) -> Result<Patterns, WatchError> {
        let err = |reason: String| WatchError::Patterns { path: origin.to_string(), reason };
        let file: PatternFile = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        let mut out = Vec::new();
        for (i, p) in file.pattern.into_iter().enumerate() {
            let level = match &p.level {
                Some(l) => Some(LogLevel::parse(l).ok_or_else(|| {
                    err(format!("pattern {} ({}): level '{l}' is not DEBUG, INFO, WARNING or ERROR", i + 1, p.category))
                })?),
                None => None,
            };
            let message = match &p.message {
                Some(m) => Some(Regex::new(m).map_err(|e| {
                    // regex errors draw a caret over several lines: keep the one that says what is wrong
                    let why = e
                        .to_string()
                        .lines()
                        .filter(|l| l.trim_start().starts_with("error:"))
                        .map(|l| l.trim().trim_start_matches("error: ").to_string())
                        .next()
                        .unwrap_or_else(|| e.to_string().replace('\n', " "));
                    err(format!(
                        "pattern {} ({}): message '{m}' is not a valid regular expression: {why}",
                        i + 1,
                        p.category
                    ))
                })?),
                None => None,
            };
            out.push(Pattern {
                category: p.category,
                source: p.source,
                level,
                logger: p.logger,
                message,
                takeover_error: p.takeover_error,
            });
        }
        if out.is_empty() {
            return Err(err("no [[pattern]] in the file".into()));
        }
        Ok(Patterns(out))
    }

    pub fn default_set() -> Patterns {
        Patterns::parse(DEFAULT_PATTERNS, "built-in assets/takeover-patterns.toml")
            .expect("the built-in patterns parse")
    }

    pub fn load(path: &Path) -> Result<Patterns, WatchError> {
        let text = crate::core::settings::file::read_text(path, crate::core::settings::file::MAX_CONFIG_FILE)
            .map_err(|e| WatchError::Patterns { path: path.display().to_string(), reason: e.to_string() })?;
        Patterns::parse(&text, &path.display().to_string())
    }

    /// The first pattern matching the record.
    pub fn classify(&self, r: &Record) -> Option<&Pattern> {
        let text = r.full_text();
        self.0.iter().find(|p| {
            p.source.as_deref().is_none_or(|s| r.source.starts_with(s))
                && p.level.is_none_or(|l| r.level >= l)
                && p.logger.as_deref().is_none_or(|l| r.logger.starts_with(l))
                && p.message.as_ref().is_none_or(|m| m.is_match(&text))
        })
    }
}

/// One log record: its first line parsed, its traceback lines joined.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub source: String,
    pub time: Option<NaiveDateTime>,
    pub pid: Option<u32>,
    #[serde(serialize_with = "ser_level")]
    pub level: LogLevel,
    pub logger: String,
    pub request_id: Option<String>,
    pub message: String,
    pub traceback: Vec<String>,
    /// node uuids named in the record
    pub nodes: Vec<String>,
    pub category: Option<String>,
    pub takeover_error: bool,
    /// at least one named node is one the migration wrote
    pub migrated_node: bool,
}

fn ser_level<S: serde::Serializer>(l: &LogLevel, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(l.as_str())
}

impl Record {
    pub fn full_text(&self) -> String {
        if self.traceback.is_empty() {
            self.message.clone()
        } else {
            format!("{}\n{}", self.message, self.traceback.join("\n"))
        }
    }
}

fn uuid_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b").expect("uuid regex")
    })
}

/// The node uuids in a text (lower-case, each once, in order).
pub fn node_uuids(text: &str) -> Vec<String> {
    let mut seen = Vec::new();
    for m in uuid_re().find_iter(text) {
        let u = m.as_str().to_ascii_lowercase();
        if !seen.contains(&u) {
            seen.push(u);
        }
    }
    seen
}

/// Turns lines of one file into records (a record ends when the next one starts, or on `flush`).
pub struct RecordBuilder {
    source: String,
    pending: Option<Record>,
}

impl RecordBuilder {
    pub fn new(source: &str) -> RecordBuilder {
        RecordBuilder { source: source.to_string(), pending: None }
    }

    /// Feeds one line; returns the record it completed, if any.
    pub fn push(&mut self, line: &str) -> Option<Record> {
        match oslo::parse(line) {
            // a traceback line of the pending record: same prefix, no [context]
            Some(h)
                if !h.has_context()
                    && self.pending.as_ref().is_some_and(|p| {
                        p.level == LogLevel::Error && h.level == LogLevel::Error && p.logger == h.logger
                    }) =>
            {
                if let Some(p) = &mut self.pending {
                    p.traceback.push(h.message().to_string());
                }
                None
            }
            Some(h) => {
                let done = self.pending.take();
                self.pending = Some(Record {
                    source: self.source.clone(),
                    time: Some(h.time),
                    pid: Some(h.pid),
                    level: h.level,
                    logger: h.logger.to_string(),
                    request_id: h.request_id().map(String::from),
                    message: h.message().to_string(),
                    traceback: Vec::new(),
                    nodes: Vec::new(),
                    category: None,
                    takeover_error: false,
                    migrated_node: false,
                });
                done
            }
            None => {
                // not oslo.log (a bare traceback line, a wrapped message): belongs to the record above
                match &mut self.pending {
                    Some(p) => p.traceback.push(line.to_string()),
                    None => {
                        self.pending = Some(Record {
                            source: self.source.clone(),
                            time: None,
                            pid: None,
                            level: LogLevel::Info,
                            logger: String::new(),
                            request_id: None,
                            message: line.to_string(),
                            traceback: Vec::new(),
                            nodes: Vec::new(),
                            category: None,
                            takeover_error: false,
                            migrated_node: false,
                        })
                    }
                }
                None
            }
        }
    }

    pub fn flush(&mut self) -> Option<Record> {
        self.pending.take()
    }
}

/// Classifies a finished record and names its nodes.
pub fn finish(mut r: Record, patterns: &Patterns, migrated: &HashSet<String>) -> Record {
    r.nodes = node_uuids(&r.full_text());
    r.migrated_node = r.nodes.iter().any(|u| migrated.contains(u));
    if let Some(p) = patterns.classify(&r) {
        r.category = Some(p.category.clone());
        r.takeover_error = p.takeover_error;
    }
    r
}

/// The offset of the first line at or after `since` (binary search on the timestamps of a
/// time-ordered oslo.log; lines without a time are skipped over).
pub fn offset_at_time(path: &Path, since: NaiveDateTime) -> Result<u64, WatchError> {
    let err = |e: std::io::Error| WatchError::Read { path: path.display().to_string(), reason: e.to_string() };
    let mut f = std::fs::File::open(path).map_err(err)?;
    let len = f.metadata().map_err(err)?.len();
    // the time of the first timestamped line starting at or after `pos`, and that line's offset
    let mut line_at = |pos: u64| -> Result<Option<(u64, NaiveDateTime)>, WatchError> {
        let mut start = pos;
        if pos > 0 {
            f.seek(SeekFrom::Start(pos - 1)).map_err(err)?;
            let mut buf = [0u8; 4096];
            let mut skipped = 0u64;
            'find: loop {
                let n = f.read(&mut buf).map_err(err)?;
                if n == 0 {
                    return Ok(None);
                }
                for (i, b) in buf[..n].iter().enumerate() {
                    if *b == b'\n' {
                        start = pos - 1 + skipped + i as u64 + 1;
                        break 'find;
                    }
                }
                skipped += n as u64;
            }
        }
        f.seek(SeekFrom::Start(start)).map_err(err)?;
        let mut chunk = vec![0u8; 64 * 1024];
        let n = f.read(&mut chunk).map_err(err)?;
        let text = String::from_utf8_lossy(&chunk[..n]);
        let mut off = start;
        for l in text.split_inclusive('\n') {
            if !l.ends_with('\n') {
                break;
            }
            let mut it = l.split(' ');
            if let (Some(d), Some(t)) = (it.next(), it.next()) {
                if let Some(ts) = parse_time(d, t) {
                    return Ok(Some((off, ts)));
                }
            }
            off += l.len() as u64;
        }
        Ok(None)
    };
    let (mut lo, mut hi) = (0u64, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match line_at(mid)? {
            Some((_, ts)) if ts < since => lo = mid + 1,
            _ => hi = mid,
        }
    }
    Ok(line_at(lo)?.map(|(o, _)| o).unwrap_or(len))
}

/// A named log file to watch.
#[derive(Debug, Clone)]
pub struct WatchedLog {
    pub name: String,
    pub path: PathBuf,
}

impl std::str::FromStr for WatchedLog {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once('=') {
            Some((n, p)) if !n.is_empty() && !p.is_empty() => Ok(WatchedLog { name: n.into(), path: p.into() }),
            _ => Err(format!("'{s}': expected NAME=PATH, e.g. ironic=/var/log/ironic/ironic-conductor.log")),
        }
    }
}

impl crate::core::kind::HasKind for WatchError {
    /// A bad patterns file is the operator's; a log that cannot be read is the world's.
    fn kind(&self) -> crate::core::kind::Kind {
        match self {
            WatchError::Patterns { .. } => crate::core::kind::Kind::Usage,
            _ => crate::core::kind::Kind::Runtime,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(lines: &[&str]) -> Vec<Record> {
        let mut b = RecordBuilder::new("ironic");
        let mut out: Vec<Record> = lines.iter().filter_map(|l| b.push(l)).collect();
        out.extend(b.flush());
        out
    }

    #[test]
    fn parses_oslo_fields() {
        let r = records(&["2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager [req-0bad1dea-0000 admin demo - - -] Failed to take over node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123."]);
        let r = &r[0];
        assert_eq!(r.pid, Some(4242));
        assert_eq!(r.level, LogLevel::Error);
        assert_eq!(r.logger, "ironic.conductor.manager");
        assert_eq!(r.request_id.as_deref(), Some("req-0bad1dea-0000"));
        assert!(r.message.starts_with("Failed to take over"));
        assert_eq!(r.time.unwrap().to_string(), "2014-10-02 12:00:01.123");
    }

    #[test]
    fn a_200_line_traceback_joins_its_error() {
        let mut lines = vec!["2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager [req-1 - -] Failed to take over node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123".to_string()];
        lines.push(
            "2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager Traceback (most recent call last):".into(),
        );
        for i in 0..198 {
            lines.push(format!(
                "2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager   File \"x.py\", line {i}, in f"
            ));
        }
        lines.push("2014-10-02 12:00:02.000 4242 INFO ironic.conductor.manager [-] next record".into());
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let r = records(&refs);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].traceback.len(), 199);
        assert_eq!(r[1].message, "next record");
    }

    #[test]
    fn node_uuids_are_extracted_and_tied_to_migrated_nodes() {
        let migrated: HashSet<String> = ["1be26c0b-03f2-4d2e-ae87-c02d7f33c123".to_string()].into();
        let r = records(&["2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager [req-1 - -] Failed to take over node 1BE26C0B-03F2-4D2E-AE87-C02D7F33C123 (instance 2be26c0b-03f2-4d2e-ae87-c02d7f33c124)"]);
        let r = finish(r[0].clone(), &Patterns::default_set(), &migrated);
        assert_eq!(r.nodes, vec!["1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "2be26c0b-03f2-4d2e-ae87-c02d7f33c124"]);
        assert!(r.migrated_node);
        assert_eq!(r.category.as_deref(), Some("takeover-failure"));
        assert!(r.takeover_error);
    }

    #[test]
    fn default_patterns_classify_the_usual_lines() {
        let p = Patterns::default_set();
        let cls = |src: &str, line: &str| {
            let mut b = RecordBuilder::new(src);
            b.push(line);
            finish(b.flush().unwrap(), &p, &HashSet::new()).category
        };
        assert_eq!(cls("ironic", "2014-10-02 12:00:01.123 1 WARNING ironic.conductor.manager [req-1 - -] During sync_power_state, max retries exceeded for node x").as_deref(), Some("power-sync-error"));
        assert_eq!(
            cls(
                "nova-compute",
                "2014-10-02 12:00:01.123 1 INFO nova.compute.resource_tracker [-] Final resource view: name=x"
            )
            .as_deref(),
            Some("nova-resources")
        );
        assert_eq!(
            cls("ironic", "2014-10-02 12:00:01.123 1 INFO ironic.conductor.manager [-] Successfully took over node x")
                .as_deref(),
            Some("takeover-ok")
        );
        assert_eq!(cls("ironic", "2014-10-02 12:00:01.123 1 INFO ironic.api [-] GET /v1/nodes").as_deref(), None);
    }

    #[test]
    fn patterns_from_a_user_file_and_bad_files() {
        let p = Patterns::parse(
            "[[pattern]]\ncategory = \"mine\"\nmessage = \"disk full\"\ntakeover_error = true\n",
            "my.toml",
        )
        .unwrap();
        let mut b = RecordBuilder::new("ironic");
        b.push("2014-10-02 12:00:01.123 1 INFO ironic.x [-] the disk full again");
        assert_eq!(finish(b.flush().unwrap(), &p, &HashSet::new()).category.as_deref(), Some("mine"));
        let e = Patterns::parse("[[pattern]]\ncategory = \"x\"\nmessage = \"(unclosed\"\n", "my.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("my.toml") && e.contains("pattern 1 (x)") && e.contains("regular expression"), "{e}");
        let e =
            Patterns::parse("[[pattern]]\ncategory = \"x\"\nlevel = \"LOUD\"\n", "my.toml").unwrap_err().to_string();
        assert!(e.contains("level 'LOUD'"), "{e}");
        assert!(Patterns::parse("[[pattern]]\ncategory = \"x\"\nmesage = \"typo\"\n", "my.toml")
            .unwrap_err()
            .to_string()
            .contains("mesage"));
        assert!(Patterns::parse("", "empty.toml").is_err());
    }

    #[test]
    fn start_from_a_time_by_binary_search() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.log");
        let mut text = String::new();
        for i in 0..5000 {
            text.push_str(&format!("2014-10-02 12:{:02}:{:02}.000 1 INFO x [-] line {i}\n", i / 60 % 60, i % 60));
            if i % 7 == 0 {
                text.push_str("a continuation line without a time\n");
            }
        }
        std::fs::write(&p, &text).unwrap();
        let since = parse_time("2014-10-02", "12:30:00.000").unwrap();
        let off = offset_at_time(&p, since).unwrap() as usize;
        assert!(
            text[off..].starts_with("2014-10-02 12:30:00.000 1 INFO x [-] line 1800\n"),
            "{}",
            &text[off..off + 60]
        );
        assert_eq!(offset_at_time(&p, parse_time("2015-01-01", "00:00:00").unwrap()).unwrap() as usize, text.len());
        assert_eq!(offset_at_time(&p, parse_time("2000-01-01", "00:00:00").unwrap()).unwrap(), 0);
    }
}

/// Where to start reading each file.
#[derive(Debug, Clone, Copy)]
pub enum Start {
    End,
    Since(NaiveDateTime),
    Beginning,
}

/// Polls every 250 ms: one `stat` per file when nothing happens (no busy loop).
pub const POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// Follows several logs from a start and turns their lines into finished, classified records.
pub struct Watcher {
    /// each file, its record builder, and how many polls it has been quiet
    files: Vec<(crate::core::logs::follow::FileFollower, RecordBuilder, u32)>,
    patterns: Patterns,
    migrated: HashSet<String>,
}

impl Watcher {
    /// Opens `logs` at `start` (a file that does not exist yet is read from its start when it appears).
    pub fn open(
        logs: &[WatchedLog],
        start: Start,
        patterns: &Patterns,
        migrated: &HashSet<String>,
    ) -> Result<Watcher, WatchError> {
        use crate::core::logs::follow::FileFollower;
        let mut files = Vec::new();
        for l in logs {
            let f = match start {
                Start::End => FileFollower::at_end(&l.name, &l.path),
                Start::Beginning => FileFollower::at_offset(&l.name, &l.path, 0),
                Start::Since(t) if l.path.exists() => {
                    FileFollower::at_offset(&l.name, &l.path, offset_at_time(&l.path, t)?)
                }
                Start::Since(_) => FileFollower::at_offset(&l.name, &l.path, 0),
            };
            files.push((f, RecordBuilder::new(&l.name), 0));
        }
        Ok(Watcher { files, patterns: patterns.clone(), migrated: migrated.clone() })
    }

    /// The records finished since the last poll. A record is complete when the next one starts, or
    /// once its file has been quiet for two polls, or at `end` (every pending record then ends).
    pub fn poll(&mut self, end: bool) -> Vec<Record> {
        let mut out = Vec::new();
        for (f, b, idle) in self.files.iter_mut() {
            let lines = f.poll_lines();
            *idle = if lines.is_empty() { *idle + 1 } else { 0 };
            out.extend(lines.iter().filter_map(|l| b.push(l)));
            if *idle >= 2 || end {
                out.extend(b.flush());
            }
        }
        out.into_iter().map(|r| finish(r, &self.patterns, &self.migrated)).collect()
    }

    /// Whether a file has more to read than its last poll took.
    pub fn behind(&self) -> bool {
        self.files.iter().any(|(f, _, _)| f.behind())
    }

    /// Everything up to the current end of every file (large files take several reads), with the
    /// last records ended.
    pub fn catch_up(&mut self) -> Vec<Record> {
        let mut out = Vec::new();
        loop {
            let mut read = false;
            for (f, b, _) in self.files.iter_mut() {
                for l in f.poll_lines() {
                    read = true;
                    out.extend(b.push(&l));
                }
            }
            if !read {
                break;
            }
        }
        for (_, b, _) in self.files.iter_mut() {
            out.extend(b.flush());
        }
        out.into_iter().map(|r| finish(r, &self.patterns, &self.migrated)).collect()
    }
}

/// Follows `logs` until `cancel`, sending each finished, classified record to `tx`.
pub async fn watch(
    logs: &[WatchedLog],
    start: Start,
    patterns: &Patterns,
    migrated: &HashSet<String>,
    tx: tokio::sync::mpsc::UnboundedSender<Record>,
    cancel: tokio_util::sync::CancellationToken,
) -> Result<(), WatchError> {
    let mut w = Watcher::open(logs, start, patterns, migrated)?;
    let mut tick = tokio::time::interval(POLL);
    loop {
        let stop = tokio::select! {
            _ = cancel.cancelled() => true,
            _ = tick.tick() => false,
        };
        for r in w.poll(stop) {
            let _ = tx.send(r);
        }
        if stop {
            return Ok(());
        }
        if w.behind() {
            // a burst (a log catching up): read on at once rather than one capped read a tick
            tick.reset_immediately();
        }
    }
}
