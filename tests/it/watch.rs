//! The takeover watch: following through rotation and copytruncate (nothing lost or repeated), a
//! 1 GB log started at its end, tracebacks joined, and `bm2ironic watch`'s exit codes, patterns
//! file and errors.

use std::collections::HashSet;
use std::io::Write;
use std::time::{Duration, Instant};

use bm2ironic::core::logs::follow::FileFollower;
use bm2ironic::core::logs::watch::{Patterns, Record, Start, WatchedLog};
use tokio_util::sync::CancellationToken;

use crate::common::bm2ironic;

fn line(i: usize) -> String {
    format!("2014-10-02 12:00:00.000 4242 INFO ironic.conductor.manager [req-{i} - -] line {i}\n")
}

async fn collect_until(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Record>, seen: &mut Vec<usize>, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "only {} of {n} lines arrived", seen.len());
        if let Ok(Some(r)) = tokio::time::timeout(left, rx.recv()).await {
            seen.push(
                r.message.trim_start_matches("line ").parse().unwrap_or_else(|_| panic!("unexpected record {r:?}")),
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rotation_and_truncation_while_following_lose_and_repeat_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ironic-conductor.log");
    std::fs::write(&path, line(0)).unwrap(); // before the watch: not reported (starts at the end)
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let logs = vec![WatchedLog { name: "ironic".into(), path: path.clone() }];
    let (c, l) = (cancel.clone(), logs.clone());
    let task = tokio::spawn(async move {
        bm2ironic::core::logs::watch::watch(&l, Start::End, &Patterns::default_set(), &HashSet::new(), tx, c).await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut seen = Vec::new();
    let mut w = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    let mut next = 1;
    let mut write = |w: &mut std::fs::File, k: usize| {
        for _ in 0..k {
            w.write_all(line(next).as_bytes()).unwrap();
            next += 1;
        }
        w.flush().unwrap();
    };
    write(&mut w, 50);
    // rename rotation: the writer still holds the old file and appends a few more lines to it
    std::fs::rename(&path, dir.path().join("ironic-conductor.log.1")).unwrap();
    write(&mut w, 5);
    let mut w2 = std::fs::File::create(&path).unwrap();
    write(&mut w2, 50);
    collect_until(&mut rx, &mut seen, 105).await;
    // copytruncate: the file is copied away and emptied under the writer (everything read by now)
    std::fs::copy(&path, dir.path().join("copy")).unwrap();
    w2.set_len(0).unwrap();
    let mut w3 = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    write(&mut w3, 50);
    collect_until(&mut rx, &mut seen, 155).await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    if let Ok(r) = rx.try_recv() {
        panic!("an extra record after all lines: {}", r.message);
    }
    assert_eq!(seen, (1..=155).collect::<Vec<_>>(), "every line once, in order");
}

#[test]
fn a_1gb_log_is_started_at_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.log");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(1 << 30).unwrap(); // 1 GiB (sparse)
    let started = Instant::now();
    let mut follower = FileFollower::at_end("ironic", &path);
    assert!(follower.poll_lines().is_empty(), "nothing before the start is read");
    let took = started.elapsed();
    assert!(took < Duration::from_millis(500), "starting at the end of 1 GiB took {took:?}");
    let mut w = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    w.write_all(b"2014-10-02 12:00:00.000 1 ERROR ironic.conductor.manager [req-1 - -] new\n").unwrap();
    assert_eq!(follower.poll_lines().len(), 1);
}

#[test]
fn watch_exits_4_on_a_takeover_error_and_names_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ironic-conductor.log");
    std::fs::write(&log, "").unwrap();
    let writer = {
        let log = log.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(600));
            let mut w = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
            writeln!(w, "2014-10-02 12:00:01.000 4242 INFO ironic.conductor.manager [req-1 - -] Successfully took over node 11111111-2222-4333-8444-555555555555").unwrap();
            writeln!(w, "2014-10-02 12:00:02.000 4242 ERROR ironic.conductor.manager [req-2 - -] Failed to take over node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123: no deploy ramdisk").unwrap();
            writeln!(
                w,
                "2014-10-02 12:00:02.000 4242 ERROR ironic.conductor.manager Traceback (most recent call last):"
            )
            .unwrap();
            writeln!(w, "2014-10-02 12:00:02.000 4242 ERROR ironic.conductor.manager   File \"ironic/conductor/manager.py\", line 1, in _do_takeover").unwrap();
        })
    };
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path())
        .args(["watch", "--for", "2s", "--json", "--log"])
        .arg(format!("ironic={}", log.display()))
        .output()
        .unwrap();
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "summary");
    assert_eq!(last["takeover_errors"], 1);
    assert_eq!(last["nodes_with_errors"][0], "1be26c0b-03f2-4d2e-ae87-c02d7f33c123");
    let err: serde_json::Value = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["record"]["level"] == "ERROR")
        .unwrap();
    assert_eq!(err["record"]["category"], "takeover-failure");
    assert_eq!(err["record"]["traceback"].as_array().unwrap().len(), 2, "the traceback is joined to its ERROR");
}

#[test]
fn watch_exits_0_when_the_takeover_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("c.log");
    std::fs::write(
        &log,
        "2014-10-02 12:00:00.000 1 ERROR ironic.conductor.manager [req-0 - -] an old error before the watch\n",
    )
    .unwrap();
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path())
        .args(["watch", "--for", "1s", "--log"])
        .arg(format!("ironic={}", log.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("watch: 0 records, 0 takeover error(s)"));
    // from the start the old error counts
    let out = bm2ironic(logs.path())
        .args(["watch", "--for", "1s", "--from-start", "--log"])
        .arg(format!("ironic={}", log.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
}

#[test]
fn watch_patterns_from_a_file_and_a_bad_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("c.log");
    std::fs::write(&log, "2014-10-02 12:00:00.000 1 INFO nova.compute.manager [-] rack 7 lost power\n").unwrap();
    let mine = dir.path().join("mine.toml");
    std::fs::write(&mine, "[[pattern]]\ncategory = \"rack-power\"\nmessage = \"lost power\"\ntakeover_error = true\n")
        .unwrap();
    let logs = tempfile::tempdir().unwrap();
    let out = bm2ironic(logs.path())
        .args(["watch", "--for", "1s", "--from-start", "--patterns"])
        .arg(&mine)
        .arg("--log")
        .arg(format!("nova-compute={}", log.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&out.stdout).contains("rack-power"));
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[pattern]]\ncategory = \"x\"\nmessage = \"([\"\n").unwrap();
    let out = bm2ironic(logs.path())
        .args(["watch", "--for", "1s", "--patterns"])
        .arg(&bad)
        .arg("--log")
        .arg(format!("x={}", log.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.toml") && err.contains("regular expression"), "{err}");
}

/// A log that never appears was not watched: `watch --for` ends saying so in its last line, exit 1
/// (before: "0 takeover error(s)" and exit 0, ten minutes of false calm with `--for 10m`); a log that
/// appears while it runs is read from its start.
#[test]
fn a_log_that_never_appears_is_not_an_all_clear() {
    let dir = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nonexistent.log");
    let out = bm2ironic(logs.path())
        .args(["watch", "--for", "1s", "--log"])
        .arg(format!("ironic={}", missing.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.contains("NOT WATCHED: ironic") && last.contains("no such file"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not every log was watched"));

    let late = dir.path().join("late.log");
    let writer = {
        let late = late.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(400));
            std::fs::write(&late, "2014-10-02 12:00:00.000 1 INFO ironic.conductor.manager [-] started\n").unwrap();
        })
    };
    let out = bm2ironic(logs.path())
        .args(["watch", "--for", "2s", "--all", "--log"])
        .arg(format!("ironic={}", late.display()))
        .output()
        .unwrap();
    writer.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("watch: 1 records, 0 takeover error(s)"), "{stdout}");
}

/// `watch --run` finds an API run where it is kept without an Ironic database (the state
/// directory), as `verify` and `rollback` do: its nodes' log lines are marked as migrated. A run named
/// that is not kept anywhere is a usage error. (Before, without a database, `--run` was ignored:
/// nothing was marked, and an unknown run went unsaid.)
#[test]
fn watch_follows_an_api_run_kept_in_the_state_directory() {
    const NODE: &str = "1be26c0b-03f2-4d2d-ae87-c02d7f33c123";
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let run = serde_json::json!({
        "id": "api-run-1", "started_at": "2026-12-03T10:00:00", "finished_at": "2026-12-03T10:05:00",
        "status": "api-committed", "plan_checksum": "c", "source": "s", "target_kind": "modern",
        "written": [{"nova_bm_id": 1, "uuid": NODE, "provision_state": "active", "instance_uuid": null,
                     "maintenance": false, "driver": "ipmi", "driver_info": {}, "properties": {},
                     "instance_info": {}, "ports": []}]
    });
    let file = state.join("api-run-1.json");
    std::fs::write(&file, run.to_string()).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let log = dir.path().join("ironic-conductor.log");
    std::fs::write(
        &log,
        format!(
            "2014-10-02 12:00:00.000 1 ERROR ironic.conductor.manager [-] Failed to take over node {NODE}: power\n"
        ),
    )
    .unwrap();
    let logs = tempfile::tempdir().unwrap();
    let watch = |run: &str| {
        bm2ironic(logs.path())
            .env("BM2IRONIC_STATE_DIR", &state)
            .args(["watch", "--for", "1s", "--from-start", "--run", run, "--log"])
            .arg(format!("ironic={}", log.display()))
            .output()
            .unwrap()
    };
    let out = watch("api-run-1");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("[{NODE} migrated]")), "the run's node is marked migrated:\n{text}");
    let out = watch("api-run-2");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("api-run-2"), "{}", String::from_utf8_lossy(&out.stderr));
}
