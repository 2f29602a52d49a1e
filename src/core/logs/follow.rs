//! Following log files (Ironic conductor, nova-compute) like `tail -F`: [`FileFollower`] starts at
//! the end (or an offset), picks up appended lines, survives truncation (copytruncate) and
//! replacement (rename + new file). The watcher (`super::watch`) reads its files through it; [`follow`]
//! feeds the wizard's log pane, with each line's level read by the oslo parser (`super::oslo`) and
//! continuation lines (tracebacks) taking the level of the record they belong to.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use super::oslo::LogLevel;
use super::oslo::{self, OsloLine};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub source: String,
    pub level: LogLevel,
    pub text: String,
    /// false for continuation lines (tracebacks) that belong to the record above
    pub starts_record: bool,
}

impl LogLine {
    /// For a narrow pane: `12:00:01 ERROR message` (no date, pid, logger or request context);
    /// traceback lines indented under their record. Lines that are not oslo.log are shown whole.
    pub fn compact(&self) -> String {
        let Some((line, rest)) = oslo::parse(&self.text).and_then(|l| Some((l, l.rest?))) else {
            return self.text.clone();
        };
        if !self.starts_record {
            return format!("    {rest}");
        }
        let time = line.clock.split('.').next().unwrap_or(line.clock);
        let msg = match rest.strip_prefix('[') {
            Some(r) => r.split_once("] ").map(|(_, m)| m).unwrap_or(r),
            None => rest,
        };
        format!("{time} {} {msg}", line.level_name)
    }
}

/// A traceback line of an oslo.log record: the record's prefix again, with text but no `[context]`.
fn is_traceback_line(line: &OsloLine) -> bool {
    line.rest.is_some() && !line.has_context()
}

fn inode(meta: &std::fs::Metadata) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        None
    }
}

/// Follows one file like `tail -F`: keeps the open file and reads what is appended; when the path
/// is replaced (rename + new file: another inode) it first drains the old file to its end, then reads
/// the new one from its start; when the file shrinks (copytruncate) it reads from the start again.
/// No line is lost or repeated across a rotation.
pub struct FileFollower {
    pub name: String,
    pub path: PathBuf,
    file: Option<std::fs::File>,
    offset: u64,
    ino: Option<u64>,
    partial: String,
    /// the last bytes before `offset`: when they change, the file was truncated and rewritten
    /// (copytruncate that regrew past our offset before we looked)
    fingerprint: Vec<u8>,
    /// the last read stopped at `READ_CAP`: there is more to read now
    behind: bool,
}

const FINGERPRINT: usize = 64;

/// Bytes read per poll at most (the rest comes at the next poll).
const READ_CAP: u64 = 4 << 20;

impl FileFollower {
    /// Starts at the current end (a 1 GB log costs an open and a `stat`).
    pub fn at_end(name: &str, path: &std::path::Path) -> FileFollower {
        let mut f = FileFollower::at_offset(name, path, 0);
        if let Some(file) = &f.file {
            f.offset = file.metadata().map(|m| m.len()).unwrap_or(0);
        }
        f.fingerprint = f.read_fingerprint().unwrap_or_default();
        f
    }

    /// The bytes just before `offset` as they are in the file now.
    fn read_fingerprint(&mut self) -> Option<Vec<u8>> {
        let f = self.file.as_mut()?;
        let n = self.offset.min(FINGERPRINT as u64);
        f.seek(SeekFrom::Start(self.offset - n)).ok()?;
        let mut buf = vec![0u8; n as usize];
        f.read_exact(&mut buf).ok()?;
        Some(buf)
    }

    pub fn at_offset(name: &str, path: &std::path::Path, offset: u64) -> FileFollower {
        let file = std::fs::File::open(path).ok();
        let ino = file.as_ref().and_then(|f| f.metadata().ok()).as_ref().and_then(inode);
        let mut f = FileFollower {
            name: name.into(),
            path: path.into(),
            file,
            offset,
            ino,
            partial: String::new(),
            fingerprint: Vec::new(),
            behind: false,
        };
        f.fingerprint = f.read_fingerprint().unwrap_or_default();
        f
    }

    fn drain(&mut self, out: &mut Vec<String>) {
        let Some(f) = &mut self.file else { return };
        let Ok(len) = f.metadata().map(|m| m.len()) else { return };
        if len == self.offset {
            return;
        }
        if len < self.offset || self.read_fingerprint().as_deref() != Some(&self.fingerprint[..]) {
            // copytruncate: the file was emptied under us (and may have grown again since)
            self.offset = 0;
            self.partial.clear();
        }
        let Some(f) = &mut self.file else { return };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut buf = Vec::new();
        let Ok(n) = f.take(READ_CAP).read_to_end(&mut buf) else { return };
        self.offset += n as u64;
        self.behind = n as u64 == READ_CAP;
        let keep = buf.len().min(FINGERPRINT);
        if buf.len() >= FINGERPRINT {
            self.fingerprint = buf[buf.len() - keep..].to_vec();
        } else {
            self.fingerprint.extend_from_slice(&buf);
            let drop = self.fingerprint.len().saturating_sub(FINGERPRINT);
            self.fingerprint.drain(..drop);
        }
        self.partial.push_str(&String::from_utf8_lossy(&buf));
        // the lines, then what follows the last newline kept once (draining line by line moved the
        // rest of a 4 MiB read for every line: 90% of the watcher's time at 30k lines/s)
        let mut start = 0;
        while let Some(pos) = self.partial[start..].find('\n') {
            let end = start + pos;
            out.push(self.partial[start..end].trim_end_matches(['\n', '\r']).to_string());
            start = end + 1;
        }
        self.partial.drain(..start);
    }

    /// Whether the last poll left bytes unread (it read `READ_CAP`): poll again without waiting.
    pub fn behind(&self) -> bool {
        self.behind
    }

    /// Complete lines appended since the last poll.
    pub fn poll_lines(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        self.drain(&mut out);
        // rotated (or appeared): the path now names another file
        let now = std::fs::metadata(&self.path).ok().as_ref().and_then(inode);
        if now.is_some() && now != self.ino {
            self.drain(&mut out);
            if !self.partial.is_empty() {
                // the old file ended without a newline
                out.push(std::mem::take(&mut self.partial));
            }
            self.file = std::fs::File::open(&self.path).ok();
            self.ino = self.file.as_ref().and_then(|f| f.metadata().ok()).as_ref().and_then(inode);
            self.offset = 0;
            self.fingerprint.clear();
            self.drain(&mut out);
        }
        out
    }
}

/// The pane's view of a follower: levels, with continuation lines taking their record's level.
struct Followed {
    file: FileFollower,
    last_level: LogLevel,
}

impl Followed {
    fn poll(&mut self) -> Vec<LogLine> {
        self.file
            .poll_lines()
            .into_iter()
            .map(|line| {
                let parsed = oslo::parse(&line);
                let own = parsed.map(|l| l.level);
                // an oslo TRACE/ERROR line that repeats the previous record's prefix is a traceback line
                let starts_record = parsed.is_some_and(|l| {
                    !(l.level == LogLevel::Error && self.last_level == LogLevel::Error && is_traceback_line(&l))
                });
                let level = own.unwrap_or(self.last_level);
                self.last_level = level;
                LogLine { source: self.file.name.clone(), level, text: line, starts_record }
            })
            .collect()
    }
}

/// Follows `files` (name, path) from their current end until `cancel`; batches go to `tx`.
pub fn follow(
    files: Vec<(String, PathBuf)>,
    tx: UnboundedSender<Vec<LogLine>>,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut followed: Vec<Followed> = files
            .into_iter()
            .map(|(name, path)| Followed { file: FileFollower::at_end(&name, &path), last_level: LogLevel::Info })
            .collect();
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tick.tick() => {}
            }
            let mut batch = Vec::new();
            for f in &mut followed {
                batch.extend(f.poll());
            }
            if !batch.is_empty() && tx.send(batch).is_err() {
                return;
            }
            if followed.iter().any(|f| f.file.behind()) {
                // a burst (a log catching up): read on at once rather than one capped read a tick
                tick.reset_immediately();
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(line: &str) -> Option<LogLevel> {
        oslo::parse(line).map(|l| l.level)
    }

    fn is_traceback_text(line: &str) -> bool {
        oslo::parse(line).is_some_and(|l| is_traceback_line(&l))
    }

    #[test]
    fn levels_of_oslo_lines() {
        assert_eq!(
            level("2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager [req-1] boom"),
            Some(LogLevel::Error)
        );
        assert_eq!(level("2014-10-02 12:00:01.123 4242 INFO nova.compute [-] ok"), Some(LogLevel::Info));
        assert_eq!(level("Traceback (most recent call last):"), None);
    }

    #[test]
    fn compact_keeps_time_level_and_message() {
        let l = LogLine {
            source: "ironic".into(),
            level: LogLevel::Error,
            text:
                "2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager [req-1 - - - -] Failed to take over node x"
                    .into(),
            starts_record: true,
        };
        assert_eq!(l.compact(), "12:00:01 ERROR Failed to take over node x");
        let t = LogLine {
            starts_record: false,
            text: "2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager Traceback (most recent call last):"
                .into(),
            ..l.clone()
        };
        assert_eq!(t.compact(), "    Traceback (most recent call last):");
        let plain = LogLine { text: "something else".into(), ..l };
        assert_eq!(plain.compact(), "something else");
    }

    #[test]
    fn traceback_lines_with_the_error_prefix_belong_to_their_record() {
        assert!(!is_traceback_text(
            "2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager [req-1 - -] Failed to take over node x"
        ));
        assert!(is_traceback_text(
            "2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager Traceback (most recent call last):"
        ));
        assert!(is_traceback_text(
            "2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager   File \"a.py\", line 1"
        ));
    }

    #[test]
    fn follows_appends_truncation_and_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.log");
        std::fs::write(&p, "old line before we started\n").unwrap();
        let mut f = Followed { file: FileFollower::at_end("c", &p), last_level: LogLevel::Info };
        assert!(f.poll().is_empty(), "starts at the end");
        use std::io::Write;
        let mut w = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        write!(w, "2014-10-02 12:00:01.123 1 ERROR x [-] failed\n  File \"a.py\"\n2014-10-02 12:00:02.000 1 INF")
            .unwrap();
        let got = f.poll();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].level, LogLevel::Error, "a traceback line takes the level of its ERROR");
        writeln!(w, "O x [-] half line completed").unwrap();
        assert_eq!(f.poll()[0].text, "2014-10-02 12:00:02.000 1 INFO x [-] half line completed");
        // copytruncate
        std::fs::write(&p, "2014-10-02 12:00:03.000 1 WARNING x [-] after truncate\n").unwrap();
        assert_eq!(f.poll()[0].level, LogLevel::Warning);
        // rename + new file
        std::fs::rename(&p, dir.path().join("c.log.1")).unwrap();
        std::fs::write(&p, "2014-10-02 12:00:04.000 1 INFO x [-] new file\n").unwrap();
        assert_eq!(f.poll()[0].text, "2014-10-02 12:00:04.000 1 INFO x [-] new file");
    }
}
