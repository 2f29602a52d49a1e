//! Commands started at once on one audit log (issue #50 item 6). Each proves the log directory
//! writable with a probe of its own (an unnamed `O_TMPFILE` file, or a name of its own), so none
//! fails on another's probe, and each record reaches the shared file in one write, a whole line.
//! Before: the probe had one fixed name (`.bm2ironic-write-test`) that one command removed while
//! another was writing it; of 30 `rollback --yes` started at once about 21 refused with "the audit
//! log cannot be written: ... No such file or directory".

use std::process::Stdio;

use crate::common::cli::{command, read_logs};
use crate::common::process::Guard;
use crate::common::{Backend, TestDb};

/// Commands started at once, each round (the issue's count).
const AT_ONCE: usize = 30;
const ROUNDS: usize = 3;

#[tokio::test(flavor = "multi_thread")]
async fn commands_started_at_once_all_write_the_audit_log_in_whole_lines() {
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "audit_probe").await else { return };
    let logs = tempfile::tempdir().unwrap();
    for round in 0..ROUNDS {
        // a command that changes a database: it refuses to run without its audit trail
        let children: Vec<_> = (0..AT_ONCE)
            .map(|_| {
                Guard::spawn(
                    command(logs.path())
                        .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
                        .args(["rollback", "--yes", "--run", "no-such-run"])
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped()),
                )
            })
            .collect();
        let mut refused = vec![];
        for c in children {
            let out = c.wait_with_output();
            let stderr = String::from_utf8_lossy(&out.stderr).to_string();
            if stderr.contains("audit log") || !stderr.contains("no-such-run") {
                refused.push(format!("exit {:?}: {stderr}", out.status.code()));
            }
        }
        assert!(
            refused.is_empty(),
            "round {round}: {} of {AT_ONCE} failed on the audit log:\n{}",
            refused.len(),
            refused.join("\n")
        );
    }
    let text = read_logs(logs.path());
    let record = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z +(TRACE|DEBUG|INFO|WARN|ERROR) ").unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for l in &lines {
        assert!(record.find(l).is_some_and(|m| m.start() == 0), "not a whole record: {l:?}");
    }
    assert_eq!(record.find_iter(&text).count(), lines.len(), "two records on one line");
    let all = AT_ONCE * ROUNDS;
    assert_eq!(text.matches("command started").count(), all, "{text}");
    assert_eq!(text.matches("command finished").count(), all, "{text}");
    let left: Vec<_> = std::fs::read_dir(logs.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("write-test"))
        .collect();
    assert!(left.is_empty(), "probes left behind: {left:?}");
}
