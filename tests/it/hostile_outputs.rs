//! Hostile input against every output channel (issue #32): passwords with blanks in database URLs,
//! a password and a token in the Ironic URL, rows holding terminal escapes, bidi and zero-width
//! characters and forged audit records, impossible sizes, a report path that cannot be written,
//! SIGTERM/SIGHUP mid-load, a full disk, and a megabyte value. Each channel is read as a file or a
//! pipe (stdout, stderr, the report in Markdown and JSON, the audit log, a proxy's reply) and searched
//! for what must not be there.

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::time::Duration;

use bm2ironic::core::demo::fixture::Fixture;

use crate::common::cli::command;
use crate::common::process::Guard;
use crate::common::proxy::start_proxy;
use crate::common::{bm, read_logs, Backend, TestDb, STANDARD_RESOLUTIONS};

/// Characters no output may carry raw: C0 controls but newline and tab, DEL, C1 (U+009B CSI),
/// bidi overrides and isolates, zero-width characters, the BOM, line and paragraph separators.
fn raw_hostile(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c < ' ' && c != '\n' && c != '\t')
                || ('\u{7f}'..='\u{9f}').contains(&c)
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
        })
        .collect()
}

fn assert_clean(what: &str, text: &str) {
    let bad = raw_hostile(text);
    assert!(bad.is_empty(), "{what} carries raw {bad:?}:\n{}", &text[..text.len().min(4000)]);
}

/// A nova_bm whose rows hold every kind of hostile text of the issue.
fn hostile_fixture() -> Fixture {
    let mut f = Fixture::generated(6, 2);
    f.nodes[0].service_host = Some("bm-compute-1\u{200b}".into());
    f.nodes[1].service_host = Some("bm-\u{1b}]0;owned\u{7}\u{8}\r2\u{202e}\u{feff}".into());
    // a task_state that would forge an audit record and split the report's decision line
    f.nodes[2].task_state =
        Some("deploying\n2026-12-02T00:00:00.000000Z  INFO bm2ironic::cli::entry: command finished code=0".into());
    f.nodes[2].instance_uuid = Some("aaaaaaaa-0000-4000-8000-00000000000f".into());
    f.nodes[3].service_host = Some("bm-3\u{9b}31m\u{2028}x\u{0}".into());
    f
}

/// Rows with escapes, bidi, zero-width and forged lines: plan (text and JSON), inventory, the report
/// in Markdown and JSON, and the audit log carry none of them raw; the decision lines stay whole and
/// run.json decodes to the very values.
#[tokio::test(flavor = "multi_thread")]
async fn hostile_rows_reach_no_channel_raw() {
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "hsrc", &hostile_fixture()).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "htgt").await else { return };
    let logs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| bm(args).args(STANDARD_RESOLUTIONS).logs(logs.path()).source(&src).target(&tgt).run();
    for args in [&["plan"][..], &["plan", "--json"], &["inventory"], &["inventory", "--json"]] {
        let out = run(args);
        assert_clean(&format!("{args:?} stdout"), &out.stdout);
        assert_clean(&format!("{args:?} stderr"), &out.stderr);
    }
    let plan = run(&["plan"]).stdout;
    assert!(plan.contains("bm-compute-1\\u{200b}"), "the zero-width space is shown: {plan}");
    assert!(!plan.lines().any(|l| l.starts_with("2026-12-02T00:00:00")), "a value started a line: {plan}");

    let md = dir.path().join("run.md");
    let json = dir.path().join("run.json");
    for report in [&md, &json] {
        let out = run(&[
            "migrate",
            "--yes",
            "--resolve",
            "unknown-state=maintenance",
            "--resolve",
            "unknown-boot=local-boot",
            "--report",
            report.to_str().unwrap(),
        ]);
        assert!(out.success(), "{}", out.text());
        // the second run finds everything migrated: roll back between the two
        let undo = bm(["rollback", "--yes"]).logs(logs.path()).target(&tgt).run();
        assert!(undo.success());
    }
    let md = std::fs::read_to_string(&md).unwrap();
    assert_clean("run.md", &md);
    for l in md.lines().filter(|l| l.starts_with("- `unknown-state`")) {
        assert!(l.contains("Action: **"), "a decision line was split: {l}");
    }
    assert!(!md.lines().any(|l| l.starts_with("2026-12-02T00:00:00")), "{md}");
    let raw = std::fs::read_to_string(&json).unwrap();
    assert_clean("run.json", &raw);
    let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert!(
        raw.contains("\\u202e") && v.to_string().contains('\u{202e}'),
        "escaped in the file, the same value decoded"
    );

    let audit = read_logs(logs.path());
    assert_clean("the audit log", &audit);
    let forged = audit.lines().filter(|l| l.starts_with("2026-12-02T00:00:00.000000Z")).count();
    assert_eq!(forged, 0, "a row forged an audit record:\n{audit}");
}

/// A password with a space, a tab, an NBSP and a newline in a database URL, and a password and a
/// token in the Ironic URL: none reaches stderr, stdout, the report, the audit log or a proxy's reply.
async fn secrets_reach_no_channel(backend: Backend) {
    let Some(src) = TestDb::with_fixture(backend, "ssrc", &Fixture::standard()).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "stgt").await else { return };
    // PostgreSQL's SCRAM (SASLprep) refuses a tab or a newline in a password; MariaDB takes them
    let (pieces, password) = match backend {
        Backend::MySql => {
            (&["Spacey1", "Tabby2", "Nbsp3x", "Newline4", "End5y"][..], "Spacey1 Tabby2\tNbsp3x\u{a0}Newline4\nEnd5y")
        }
        _ => (&["Spacey1", "Nbsp3x", "End5y"][..], "Spacey1 Nbsp3x\u{a0}End5y"),
    };
    let user = format!("spacey_{}", std::process::id());
    let admin = src.admin().await;
    match backend {
        Backend::MySql => {
            let _ = admin.execute(&format!("DROP USER IF EXISTS '{user}'@'127.0.0.1'"), vec![]).await;
            admin
                .execute(&format!("CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{password}'"), vec![])
                .await
                .unwrap();
            admin.execute(&format!("GRANT SELECT ON {}.* TO '{user}'@'127.0.0.1'", src.name), vec![]).await.unwrap();
        }
        _ => {
            admin.execute(&format!("DROP ROLE IF EXISTS {user}"), vec![]).await.unwrap();
            admin.execute(&format!("CREATE ROLE {user} LOGIN PASSWORD '{password}'"), vec![]).await.unwrap();
            admin.execute(&format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {user}"), vec![]).await.unwrap();
        }
    }
    admin.close().await;
    let base = src.admin_url.split_once("://").unwrap().1.rsplit_once('@').unwrap().1;
    let scheme = if backend == Backend::MySql { "mysql" } else { "postgresql" };
    let good = format!("{scheme}://{user}:{password}@{base}");
    let wrong = format!("{scheme}://{user}:{password}Wrong6@{base}");
    // a query is refused (it would be sent before every path); the userinfo is kept (Ironic's
    // http_basic auth) and shown masked
    let api_query = "http://apiuser:ApiPw-9x@127.0.0.1:9/v1?token=Tok3n-abcd&fields=uuid";
    let api = "http://apiuser:ApiPw-9x@127.0.0.1:9/v1";
    let all = [pieces, &["ApiPw-9x", "Tok3n-abcd", "Wrong6"]].concat();

    let logs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("run.md");
    let mut seen = String::new();
    let mut run = |args: &[&str], env: &[(&str, &str)]| {
        let out = env.iter().fold(bm(args).logs(logs.path()), |c, (k, v)| c.env(k, v)).run();
        seen.push_str(&out.stdout);
        seen.push_str(&out.stderr);
        out
    };
    let ok = run(&["-vv", "--nova-bm-db", &good, "inventory"], &[]);
    assert!(ok.success(), "the password with blanks logs in: {}", ok.stderr);
    let denied = run(&["-vv", &format!("--nova-bm-db={wrong}"), "inventory"], &[]);
    assert_eq!(denied.code, 1);
    let tgt_url = tgt.admin_url.as_str();
    let mut migrate = vec!["migrate", "--yes", "--report", report.to_str().unwrap()];
    migrate.extend_from_slice(STANDARD_RESOLUTIONS);
    let loaded = run(&migrate, &[("BM2IRONIC_NOVA_BM_DB", &good), ("BM2IRONIC_IRONIC_DB", tgt_url)]);
    assert!(loaded.success(), "{}", loaded.stderr);
    let unreachable =
        run(&["verify", "--ironic-url", api], &[("BM2IRONIC_NOVA_BM_DB", &good), ("BM2IRONIC_IRONIC_DB", tgt_url)]);
    assert_ne!(unreachable.code, 0);
    assert!(unreachable.stderr.contains("apiuser:***@127.0.0.1:9"), "{}", unreachable.stderr);
    assert!(unreachable.stderr.contains("cannot reach the Ironic API"), "{}", unreachable.stderr);
    let env = [
        ("BM2IRONIC_NOVA_BM_DB", good.as_str()),
        ("BM2IRONIC_IRONIC_DB", tgt_url),
        ("BM2IRONIC_IRONIC_URL", api_query),
    ];
    let refused = run(&["verify"], &env);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("holds a query"), "{}", refused.stderr);
    run(&["migrate", "--via", "api", "--yes"], &[("BM2IRONIC_NOVA_BM_DB", &good), ("BM2IRONIC_IRONIC_URL", api_query)]);
    run(
        &["-vv", "migrate", "--via", "api", "--yes"],
        &[("BM2IRONIC_NOVA_BM_DB", &good), ("BM2IRONIC_IRONIC_URL", api)],
    );

    // the proxy in front of an Ironic that does not answer: its 502 names the Ironic it asked
    let mut proxy = start_proxy(&["--auth", "noauth", "--ironic-timeout", "2s", "--ironic-url", api], &[]).await;
    let mut reply = String::new();
    for _ in 0..100 {
        if let Ok(r) = reqwest::get(format!("{}/v2.1/os-baremetal-nodes", proxy.base)).await {
            assert_eq!(r.status().as_u16(), 502);
            reply = r.text().await.unwrap();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reply.contains("Ironic"), "the proxy answered: {reply}");
    proxy.terminate();
    let proxy_err = proxy.output();

    let everything = format!(
        "{seen}{reply}{proxy_err}{}{}{}",
        read_logs(logs.path()),
        read_logs(&proxy.logs),
        std::fs::read_to_string(&report).unwrap()
    );
    for secret in all {
        if let Some(at) = everything.find(secret) {
            let from = everything[..at].rfind('\n').unwrap_or(0);
            panic!("{secret} reached an output: ...{}", &everything[from..(at + 200).min(everything.len())]);
        }
    }
    assert!(read_logs(logs.path()).contains("command started argv="), "the audit log was written");
}

/// `invalid-size`: negative sizes and sizes past Nova's 32-bit columns (2^63-1) are named; with the
/// documented `maintenance` action the node goes without them, and `verify` knows they were left out
/// on purpose (before, it reported "expected '-1', found 'null'" and exited 4).
async fn impossible_sizes_are_named_and_verify_knows_what_was_left_out(backend: Backend) {
    let mut f = Fixture::generated(4, 1);
    f.nodes[0].cpus = Some(-1);
    // MariaDB's and PostgreSQL's nova_bm hold these sizes in INT columns: only SQLite holds 2^63-1
    let huge = backend == Backend::Sqlite;
    f.nodes[1].memory_mb = Some(if huge { i64::MAX } else { -2 });
    f.nodes[2].local_gb = Some(if huge { 1 << 40 } else { -3 });
    let Some(src) = TestDb::with_fixture(backend, "isrc", &f).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "itgt").await else { return };
    let logs = tempfile::tempdir().unwrap();
    let cmd = |args: &[&str]| {
        let c = bm(args).logs(logs.path()).source(&src).target(&tgt);
        match args[0] {
            "verify" => c.run(),
            _ => c.args(STANDARD_RESOLUTIONS).run(),
        }
    };
    let plan = cmd(&["plan"]);
    assert_eq!(plan.code, 3, "{}", plan.stdout);
    let p = plan.stdout;
    assert!(p.contains("invalid-size (3, 3 BLOCKING"), "{p}");
    if huge {
        assert!(p.contains(&format!("memory_mb={}", i64::MAX)) && p.contains("local_gb=1099511627776"), "{p}");
    }
    let m = cmd(&["migrate", "--yes", "--resolve", "invalid-size=maintenance"]);
    assert!(m.success(), "{}", m.stderr);
    let v = cmd(&["verify"]);
    assert_eq!(v.code, 0, "{}", v.text());
}

per_backend! {
    [servers] secrets_reach_no_channel => super::secrets_reach_no_channel;
    impossible_sizes_are_named_and_verify_knows_what_was_left_out => super::impossible_sizes_are_named_and_verify_knows_what_was_left_out;
    a_signal_mid_load_cancels_it_like_ctrl_c => super::a_signal_mid_load_cancels_it_like_ctrl_c;
}

/// SIGTERM and SIGHUP (a dropped SSH session) mid-load: rolled back, said on stderr, the `--json`
/// stream ends with a `failed` event, the audit log has the signal and the command's end, and the
/// target is byte for byte as before (exit 1, as Ctrl-C).
async fn a_signal_mid_load_cancels_it_like_ctrl_c(backend: Backend) {
    let Some(src) = TestDb::with_fixture(backend, "gsrc", &Fixture::generated(20_000, 10)).await else { return };
    let Some(tgt) = TestDb::ironic(backend, "gtgt").await else { return };
    let before = tgt.dump();
    for (signal, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP")] {
        let logs = tempfile::tempdir().unwrap();
        let mut child = Guard::spawn(
            command(logs.path())
                .args(["migrate", "--yes", "--json"])
                .args(STANDARD_RESOLUTIONS)
                .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
                .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        );
        let mut lines = BufReader::new(child.take_stdout()).lines();
        let mut events = Vec::new();
        for l in lines.by_ref() {
            let l = l.unwrap();
            let first_write = l.contains("\"progress\"");
            events.push(l);
            if first_write {
                unsafe { libc::kill(child.id() as i32, signal) };
                break;
            }
        }
        events.extend(lines.map_while(Result::ok));
        let status = child.wait();
        let mut stderr = String::new();
        child.take_stderr().read_to_string(&mut stderr).unwrap();
        assert_eq!(status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(&format!("{name} received")) && stderr.contains("rolled back"), "{name}: {stderr}");
        let last: serde_json::Value = serde_json::from_str(events.last().unwrap()).unwrap();
        assert_eq!(last["event"], "failed", "{name}: the stream ends with the failure: {last}");
        let audit = read_logs(logs.path());
        assert!(audit.contains(name) && audit.contains("command finished code=1"), "{name}: {audit}");
        assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 0, "{name}");
        assert!(tgt.dump() == before, "{name}: the target is not as it was");
    }
}

/// `--report` into a directory that does not exist: refused before anything is read (exit 2); a report
/// that fails only after the commit is a warning, the report kept in the state directory, exit 0.
#[tokio::test(flavor = "multi_thread")]
async fn the_report_path_is_checked_first_and_never_fails_a_commit() {
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "rsrc", &Fixture::generated(20_000, 10)).await else {
        return;
    };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "rtgt").await else { return };
    let logs = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let out = bm(["migrate", "--yes", "--report", "/nonexistent/run.md"])
        .args(STANDARD_RESOLUTIONS)
        .logs(logs.path())
        .source(&src)
        .target(&tgt)
        .run();
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("/nonexistent") && out.stderr.contains("nothing was done"));
    assert_eq!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await, 0);

    // the directory goes away while the load runs
    let gone = tempfile::tempdir().unwrap();
    let report = gone.path().join("run.md");
    let mut child = Guard::spawn(
        command(logs.path())
            .arg("--state-dir")
            .arg(state.path())
            .args(["migrate", "--yes", "--json", "--report", report.to_str().unwrap()])
            .args(STANDARD_RESOLUTIONS)
            .env("BM2IRONIC_NOVA_BM_DB", &src.reader_url)
            .env("BM2IRONIC_IRONIC_DB", &tgt.admin_url)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let mut lines = BufReader::new(child.take_stdout()).lines();
    for l in lines.by_ref() {
        if l.unwrap().contains("\"started\"") {
            std::fs::remove_dir_all(gone.path()).unwrap();
            break;
        }
    }
    lines.for_each(drop);
    let status = child.wait();
    let mut stderr = String::new();
    child.take_stderr().read_to_string(&mut stderr).unwrap();
    assert_eq!(status.code(), Some(0), "a committed load exits 0: {stderr}");
    assert!(stderr.contains("the load is committed, but the report could not be written"), "{stderr}");
    let kept: Vec<_> = std::fs::read_dir(state.path().join("reports")).unwrap().flatten().collect();
    assert_eq!(kept.len(), 1, "{stderr}");
    assert!(std::fs::read_to_string(kept[0].path()).unwrap().contains("## Verification"));
    assert!(tgt.scalar_i64("SELECT COUNT(*) FROM nodes").await > 0);
}

/// The target's disk fills up mid-load (SQLite on a small tmpfs): the message says nothing was
/// written, and the `--json` stream ends with a `failed` event rather than after the last `written`.
#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_ends_the_stream_with_the_failure() {
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "dsrc", &Fixture::generated(20_000, 10)).await else {
        return;
    };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "dtgt").await else { return };
    let Some(full) = crate::common::Tmpfs::mount("3m") else { return };
    let file = full.path().join("ironic.sqlite");
    std::fs::copy(tgt.admin_url.trim_start_matches("sqlite:///"), &file).unwrap();
    let before = std::fs::read(&file).unwrap();
    let logs = tempfile::tempdir().unwrap();
    let out = bm(["migrate", "--yes", "--json"])
        .args(STANDARD_RESOLUTIONS)
        .logs(logs.path())
        .source(&src)
        .env("BM2IRONIC_IRONIC_DB", format!("sqlite:///{}", file.display()))
        .run();
    let stderr = out.stderr.clone();
    assert_eq!(out.code, 1, "{stderr}");
    assert!(
        stderr.contains("disk holding the database is full") && stderr.contains("nothing of it was written"),
        "{stderr}"
    );
    let stdout = out.stdout;
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "failed", "{last}");
    let after = std::fs::read(&file).unwrap();
    if after != before {
        let diffs: Vec<usize> = (0..before.len().min(after.len())).filter(|&i| before[i] != after[i]).collect();
        eprintln!(
            "DIFF len {} -> {}, {} bytes differ, first {:?}",
            before.len(),
            after.len(),
            diffs.len(),
            &diffs[..diffs.len().min(20)]
        );
        for e in std::fs::read_dir(full.path()).unwrap().flatten() {
            eprintln!("DIFF file {:?} {}", e.path(), e.metadata().unwrap().len());
        }
        eprintln!("DIFF stderr {stderr}");
    }
    assert!(after == before, "the target changed");
}

/// A 1 MB `service_host` on 20 nodes: the tables are clipped (a cell at most 64 characters), the
/// JSON keeps the whole value.
#[tokio::test(flavor = "multi_thread")]
async fn a_megabyte_value_is_clipped_in_tables_and_kept_in_json() {
    let mut f = Fixture::generated(20, 1);
    for n in &mut f.nodes {
        n.service_host = Some("h".repeat(1 << 20));
    }
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "msrc", &f).await else { return };
    let logs = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| bm(args).logs(logs.path()).source(&src).run();
    let table = run(&["inventory"]);
    assert!(table.success(), "{}", table.stderr);
    assert!(table.stdout.len() < 64 * 1024, "inventory printed {} bytes", table.stdout.len());
    assert!(table.stdout.contains('…'));
    let json = run(&["inventory", "--json"]);
    assert!(json.stdout.len() > 20 << 20, "the JSON keeps every value whole");
}
