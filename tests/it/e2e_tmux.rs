//! The real binary in a real terminal (tmux): `demo`, resolve the conflicts, run the rehearsal, see
//! the summary, quit, and the terminal is restored (alternate screen left, cursor shown). The
//! connections are tested without a key, and a broken one stops Enter with its reason. And a panic
//! inside a task restores the terminal and exits with a message.

use std::path::Path;

use crate::common::tmux::{have_tmux, Session};

fn command(dir: &Path, logs: &Path, env: &str) -> String {
    let bin = assert_cmd::cargo::cargo_bin("bm2ironic");
    format!(
        "env -u NO_COLOR {env} TERM=xterm-256color {} --log-dir {} demo --dir {}; echo EXIT=$?; sleep 60",
        bin.display(),
        logs.display(),
        dir.display()
    )
}

#[test]
fn demo_rehearsal_end_to_end_in_a_real_terminal() {
    if !have_tmux() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = Session::start("e2e", &command(&tmp.path().join("sb"), &tmp.path().join("logs"), ""));
    s.wait_for("Connections and options");
    assert_eq!(s.format("#{alternate_on}"), "1", "the wizard owns the alternate screen");
    s.keys(&["Enter"]);
    s.wait_for("nova_bm: 36 nodes");
    s.keys(&["n"]);
    s.wait_for("blocking left");
    // "a" (all of the code) lasts for one code: a then 1 for each of the seven
    for _ in 0..7 {
        s.keys(&["a", "1"]);
    }
    s.wait_for("all decided");
    s.keys(&["n"]);
    s.wait_for("REHEARSAL: shown only, nothing is changed in Nova");
    s.keys(&["n"]);
    s.wait_for("Press Enter to start the rehearsal");
    s.keys(&["Enter"]);
    s.wait_for("rehearsal done, rolled back");
    s.wait_for("1 error(s)");
    s.keys(&["Enter"]);
    let summary = s.wait_for("Nothing stayed");
    assert!(summary.contains("35") && summary.contains("58"), "{summary}");
    // the decisions were not saved: q asks first, y quits without saving
    s.keys(&["q"]);
    s.wait_for("Decisions not saved");
    s.keys(&["y"]);
    assert_eq!(s.wait_exit(), "0", "exit status");
    assert_eq!(s.format("#{alternate_on}"), "0", "the alternate screen was left");
    assert_eq!(s.format("#{cursor_flag}"), "1", "the cursor is visible again");
    // on the normal screen, what to keep (#48 item 4: the quit left a blank shell)
    let shell = s.screen();
    let sb = tmp.path().join("sb");
    for line in [
        "bm2ironic: what to keep of this session".to_string(),
        "  outcome     rehearsal: ".into(),
        "  report      not written: s on the summary writes it".into(),
        format!("  decisions   not saved: the journal {}", sb.join("bm2ironic-resolutions.toml.journal").display()),
        format!("  sandbox     {}", sb.display()),
    ] {
        assert!(shell.contains(&line), "{line:?} missing:\n{shell}");
    }
}

#[test]
fn a_panic_inside_a_task_restores_the_terminal_and_says_so() {
    if !have_tmux() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = Session::start(
        "panic",
        &command(&tmp.path().join("sb"), &tmp.path().join("logs"), "BM2IRONIC_TEST_PANIC_IN_TASK=1"),
    );
    let status = s.wait_exit();
    assert_eq!(status, "70", "exit status of an internal error:\n{}", s.screen());
    assert_eq!(s.format("#{alternate_on}"), "0");
    assert_eq!(s.format("#{cursor_flag}"), "1");
    let screen = s.screen();
    assert!(
        screen.contains("internal error: test panic inside a task") && screen.contains("terminal was restored"),
        "{screen}"
    );
}

#[test]
fn connections_are_tested_without_a_key_and_a_broken_one_stops_enter() {
    if !have_tmux() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let s = Session::start("conn", &command(&tmp.path().join("sb"), &tmp.path().join("logs"), ""));
    // nova_bm, Ironic, Nova and Nova API: all tested, and no key was pressed
    let screen = s.wait_for_count("ok: SQLite", 4);
    assert!(!screen.contains("not tested"), "{screen}");
    // break the focused nova_bm URL: it is tested again once the typing stops, and fails
    s.keys(&["End", "x"]);
    let screen = s.wait_for("failed:");
    assert_eq!(screen.matches("ok: SQLite").count(), 3, "{screen}");
    s.keys(&["Enter"]);
    let screen = s.wait_for("nova_bm database: connection failed:");
    assert!(screen.contains("nova_bm.sqlitex"), "the reason names what failed:\n{screen}");
    assert!(screen.contains("Connections and options") && !screen.contains("nova_bm: 36 nodes"), "{screen}");
    // mended, it is tested again and Enter goes on
    s.keys(&["BSpace"]);
    s.wait_for_count("ok: SQLite", 4);
    s.keys(&["Enter"]);
    s.wait_for("nova_bm: 36 nodes");
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0", "exit status");
}
