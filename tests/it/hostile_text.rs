//! Hostile text never reaches the operator's terminal raw: terminal escape sequences in nova_bm rows
//! (`inventory`, `plan`), in error messages and in the logs `watch` follows are shown visibly
//! (`\x1b`); `watch` refuses what it cannot follow (a directory, an unknown run) instead of reporting a
//! false all-clear, and a multi-megabyte log line is shown capped, not printed whole.

use bm2ironic::core::demo::fixture::Fixture;

use crate::common::{bm2ironic, Backend, TestDb};

/// The escapes of the issue: window title (OSC 0), clear screen (CSI 2J), clipboard write (OSC 52).
const TITLE: &str = "\x1b]0;pwned\x07";
const CLEAR: &str = "\x1b[2J";
const CLIPBOARD: &str = "\x1b]52;c;ZXZpbA==\x07";

fn raw_escape(out: &[u8]) -> bool {
    out.contains(&0x1b) || out.contains(&0x07)
}

#[tokio::test(flavor = "multi_thread")]
async fn escapes_in_nova_bm_rows_are_shown_not_emitted() {
    let mut f = Fixture::generated(3, 1);
    f.nodes[0].service_host = Some(format!("bm-1{TITLE}"));
    f.nodes[0].pm_address = Some(format!("127.0.0.1{CLEAR}"));
    f.nodes[1].pm_user = Some(format!("admin{CLIPBOARD}"));
    f.nodes[1].task_state = Some(format!("active{CLEAR}"));
    f.interfaces[0].address = Some(format!("52:54:00:00:00:01{TITLE}"));
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "src", &f).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "tgt").await else { return };
    let logs = tempfile::tempdir().unwrap();
    for args in
        [&["inventory"][..], &["plan", "--deploy-kernel", "k", "--deploy-ramdisk", "r", "--default-arch", "x86_64"]]
    {
        let out = bm2ironic(logs.path())
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            .args(args)
            .output()
            .unwrap();
        assert!(!raw_escape(&out.stdout), "{args:?} stdout: {:?}", String::from_utf8_lossy(&out.stdout));
        assert!(!raw_escape(&out.stderr), "{args:?} stderr: {:?}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("\\x1b"), "{args:?} shows the escape visibly: {text}");
    }
    // an error message naming a hostile value
    let out = bm2ironic(logs.path())
        .args(["inventory", "--nova-bm-db", &format!("sqlite:////nonexistent{TITLE}.db")])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(!raw_escape(&out.stderr), "{:?}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn watch_shows_escapes_and_caps_huge_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ironic-conductor.log");
    let huge = "A".repeat(5 * 1024 * 1024); // the follower reads a bounded chunk per tick: 50 MB takes seconds
    std::fs::write(
        &log,
        format!(
            "2026-11-30 01:00:00.000 42 ERROR ironic.conductor.manager [-] Failed to take over node bbbbbbbb-0000-4000-8000-000000000001 {TITLE}{CLIPBOARD}\n\
             2026-11-30 01:00:01.000 42 ERROR ironic.conductor.manager [-] Failed to take over {huge}\n"
        ),
    )
    .unwrap();
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path())
        .args(["watch", "--for", "2s", "--from-start", "--log"])
        .arg(format!("ironic={}", log.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!raw_escape(&out.stdout), "watch emitted a raw escape");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\\x1b]0;pwned"), "{text}");
    assert!(out.stdout.len() < 1024 * 1024, "a 5 MB line is capped on screen: {} bytes", out.stdout.len());
    assert!(text.contains("bytes more"), "with a marker");
    let audit: u64 = std::fs::read_dir(logs.path()).unwrap().flatten().map(|e| e.metadata().unwrap().len()).sum();
    assert!(audit < 1024 * 1024, "and in the audit log: {audit} bytes");
}

#[test]
fn watch_and_rollback_refuse_a_directory_and_an_unknown_run() {
    let dir = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path())
        .args(["watch", "--for", "1s", "--log"])
        .arg(format!("ironic={}", dir.path().display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a directory is no all-clear: {}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));

    let rt = tokio::runtime::Runtime::new().unwrap();
    let tgt = rt.block_on(TestDb::ironic(Backend::Sqlite, "tgt")).unwrap();
    let log = dir.path().join("c.log");
    std::fs::write(&log, "").unwrap();
    let out = bm2ironic(logs.path())
        .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
        .args(["watch", "--for", "1s", "--run", "no-such-run", "--log"])
        .arg(format!("ironic={}", log.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-run"), "{}", String::from_utf8_lossy(&out.stderr));
    // the same wrong run id is the same mistake for `rollback` (it exited 1 before the errors
    // said their own kind, src/core/kind.rs)
    let out = bm2ironic(logs.path())
        .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
        .args(["rollback", "--yes", "--run", "no-such-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-run"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `-v` mirrors the audit log to stderr: no colour codes when stderr is not a terminal (a file, a
/// pipe: here, the test's pipe), even with TERM set and NO_COLOR unset.
#[tokio::test(flavor = "multi_thread")]
async fn verbose_stderr_that_is_not_a_terminal_gets_no_colour_codes() {
    let Some(db) = TestDb::with_fixture(Backend::Sqlite, "vcol", &Fixture::standard()).await else { return };
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path())
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .env("BM2IRONIC_NOVA_BM_DB", &db.reader_url)
        .args(["-vv", "inventory", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("connected"), "the audit records are mirrored");
    assert!(!raw_escape(&out.stderr), "{:?}", String::from_utf8_lossy(&out.stderr));
}

/// The audit log says who ran the command by its uid, not by what `$USER` claims.
#[test]
fn the_audit_log_names_the_uid_not_what_user_claims() {
    let logs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path())
        .env("USER", "someone-else")
        .args(["demo", "--no-tui", "--dir"])
        .arg(dir.path().join("sb"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let log = crate::common::read_logs(logs.path());
    // SAFETY: getuid has no preconditions
    let uid = unsafe { libc::getuid() };
    assert!(log.contains(&format!("uid {uid} (USER=someone-else)")), "{log}");
}
