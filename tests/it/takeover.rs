//! The takeover check against a real Ironic (PyPI ironic==39.0.0 on SQLite) whose `ipmi` nodes point
//! at fake BMCs on 127.0.0.1 (PyPI pyghmi, scripts/fakebmc.py), one Ironic for every case: healthy
//! nodes are taken over, the machine that was powered off stays off (the 2014 tool would have
//! powered it on), a BMC that refuses the password and one that is not running are reported failing
//! from the conductor's log long before the deadline, the check ends once every node is decided, a
//! BMC lost after the takeover is named, and `--fail-fast` stops at the first failing node.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::bmc::{Bmc, BmcOptions};
use crate::common::ironic::{self, start_ironic, IronicOptions};
use crate::common::ports::port;
use crate::common::{bm, server_env, Backend, TestDb, IRONIC_VENV};
use bm2ironic::core::demo::fixture::Fixture;

/// The NDJSON events of a command's stdout.
fn events(stdout: &str) -> Vec<serde_json::Value> {
    stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The `takeover-status` events of one node, in order: (state, reason, elapsed_s).
fn statuses(ev: &[serde_json::Value], uuid: &str) -> Vec<(String, String, f64)> {
    ev.iter()
        .filter(|v| v["event"] == "takeover-status" && v["uuid"] == uuid)
        .map(|v| {
            (
                v["state"].as_str().unwrap_or("").to_string(),
                v["reason"].as_str().unwrap_or("").to_string(),
                v["elapsed_s"].as_f64().unwrap_or(f64::MAX),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn takeover_reports_failing_bmcs_early_and_ends_once_every_node_is_decided() {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let venv = Path::new(&venv).to_path_buf();
    // five nodes: 1-3 healthy (node 3 holds an instance whose machine is powered off, task_state
    // still 'active'), node 4's BMC refuses the password Ironic has, node 5 has no BMC running at all
    let mut f = Fixture::generated(5, 1);
    for n in &mut f.nodes {
        n.pm_password = Some(bm2ironic::core::db::secret::Secret::new(format!("bmc-pass-{}", n.id)));
    }
    let Some(src) = TestDb::with_fixture(Backend::Sqlite, "tsrc", &f).await else { return };
    let Some(tgt) = TestDb::ironic(Backend::Sqlite, "ttgt").await else { return };
    let tmp = tempfile::tempdir().unwrap();
    for name in ["deploy.kernel", "deploy.initramfs"] {
        std::fs::write(tmp.path().join(name), b"x").unwrap();
    }
    let logs = tempfile::tempdir().unwrap();
    let k = format!("file://{}", tmp.path().join("deploy.kernel").display());
    let r = format!("file://{}", tmp.path().join("deploy.initramfs").display());
    let out = bm(["migrate", "--yes", "--default-arch", "x86_64", "--deploy-kernel", &k, "--deploy-ramdisk", &r])
        // about the takeover check, not boots (tests/it/boot.rs boots one): the operator's word
        .args(["--resolve", "unknown-boot=local-boot"])
        .logs(logs.path())
        .source(&src)
        .target(&tgt)
        .run();
    assert!(out.success(), "{}", out.stderr);

    // nova_bm knows no IPMI port: give each node its own fake BMC port (an operator edit, after the load)
    let bmc_ports: Vec<u16> = (0..5).map(|_| port()).collect();
    let rows = tgt.rows("SELECT uuid, driver_info FROM nodes ORDER BY id").await;
    assert_eq!(rows.len(), 5);
    for (i, row) in rows.iter().enumerate() {
        let mut di: serde_json::Value = serde_json::from_str(&row[1]).unwrap();
        di["ipmi_port"] = serde_json::json!(bmc_ports[i]);
        tgt.exec(&format!("UPDATE nodes SET driver_info = '{}' WHERE uuid = '{}'", di, row[0])).await;
    }
    let uuids: Vec<String> = rows.iter().map(|r| r[0].clone()).collect();
    let bmc = |i: usize, password: &str| Bmc::start(BmcOptions::new(&venv, password).at("127.0.0.1", bmc_ports[i]));
    let mut bmcs: Vec<Option<Bmc>> = (0..3).map(|i| Some(bmc(i, &format!("bmc-pass-{}", i + 1)))).collect();
    let _wrong_password = bmc(3, "not-the-password-ironic-has");
    std::thread::sleep(Duration::from_millis(500));

    // a real Ironic on that database, power sync every 3 s
    let ironic = start_ironic(IronicOptions {
        dir: Some(tmp.path().join("ironic")),
        sync_interval: Some(3),
        ..IronicOptions::new(&venv, &tgt.admin_url)
    })
    .await;
    let base = ironic.base.clone();
    let ironic_log = ironic.log_path();
    let verify = |extra: &[&str]| {
        bm(["verify", "--takeover", "--timeout", "90s", "--log"])
            .arg(format!("ironic={}", ironic_log.display()))
            .args(extra)
            .logs(logs.path())
            .source(&src)
            .target(&tgt)
            .env("BM2IRONIC_IRONIC_URL", &base)
            .run()
    };

    // 1. the wrong password and the missing BMC are failing from the log within seconds (Ironic
    //    itself gives up on them after its power-sync retries); the check ends once all are decided
    let started = Instant::now();
    let out = verify(&["--json"]);
    let took = started.elapsed();
    let text = out.stdout.clone();
    assert_eq!(out.code, 4, "{text}{}", out.stderr);
    assert!(took < Duration::from_secs(45), "ended {took:?} after it started: the deadline is 90 s\n{text}");
    let ev = events(&out.stdout);
    let names: Vec<&str> = ev.iter().map(|v| v["event"].as_str().unwrap_or("")).collect();
    assert_eq!(names[0], "takeover-started", "{text}");
    assert_eq!((ev[0]["nodes"].as_u64(), ev[0]["timeout_s"].as_u64()), (Some(5), Some(90)));
    // every status change, then each node's verdict, then how the check ended, then verify's summary
    let last_status = names.iter().rposition(|n| *n == "takeover-status").unwrap();
    let first_node = names.iter().position(|n| *n == "takeover").unwrap();
    assert!(last_status < first_node, "{names:?}");
    assert_eq!(names[first_node..first_node + 5], ["takeover"; 5], "{names:?}");
    // (differences may come before the summary: once it reads a power state, Ironic 39 adds
    // properties.vendor, which verify reports)
    assert_eq!(names[first_node + 5], "takeover-end", "{names:?}");
    assert!(names[first_node + 6..names.len() - 1].iter().all(|n| *n == "difference"), "{names:?}");
    assert_eq!(names.last(), Some(&"summary"), "{names:?}");
    assert_eq!(ev[first_node + 5]["ending"], "all-decided", "not the deadline: {text}");
    assert_eq!((ev[first_node + 5]["taken_over"].as_u64(), ev[first_node + 5]["failing"].as_u64()), (Some(3), Some(2)));
    for u in &uuids[..3] {
        let s = statuses(&ev, u);
        assert_eq!(s.last().map(|s| s.0.as_str()), Some("ok"), "{u}: {s:?}");
    }
    for u in &uuids[3..] {
        let s = statuses(&ev, u);
        assert_eq!(s.len(), 1, "waiting, then failing once: {s:?}");
        let (state, reason, at) = &s[0];
        assert_eq!(state, "failed");
        assert!(reason.starts_with("bmc-error: IPMI Error"), "the BMC's error from the log: {reason}");
        assert!(reason.contains("Unable to establish IPMI v2 / RMCP+ session"), "with ipmitool's words: {reason}");
        assert!(*at < 30.0, "failing {at} s into a 90 s wait");
    }
    let verdicts: Vec<&serde_json::Value> = ev[first_node..first_node + 5].iter().map(|v| &v["node"]).collect();
    assert!(verdicts[3]["log_errors"][0]["count"].as_u64().is_some(), "records come collapsed: {text}");
    let n3 = ironic::get(&base, &format!("/v1/nodes/{}", uuids[2])).await;
    assert_eq!(n3["provision_state"], "active");
    assert_eq!(n3["power_state"], "power off", "the stopped machine is read as off");
    assert!(!bmcs[2].as_ref().unwrap().power_actions().iter().any(|l| l == "power on"), "and never powered on");

    // 2. node 2's BMC stops answering after the takeover: its power state stays 'power off' in the
    //    API until Ironic gives up, but its errors in the log name it failing at once
    drop(bmcs[1].take());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&ironic_log)
        .unwrap_or_default()
        .lines()
        .any(|l| l.contains("IPMI Error") && l.contains(uuids[1].as_str()))
    {
        assert!(Instant::now() < deadline, "Ironic never tried the dead BMC");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let out = verify(&["--json"]);
    let text = out.stdout.clone();
    assert_eq!(out.code, 4, "{text}");
    let ev = events(&out.stdout);
    let s = statuses(&ev, &uuids[1]);
    assert_eq!(s.last().map(|s| s.0.as_str()), Some("failed"), "{text}");
    assert!(s.last().unwrap().1.starts_with("bmc-error:"), "{s:?}");
    assert!(
        ironic::get(&base, &format!("/v1/nodes/{}", uuids[1])).await["fault"].is_null(),
        "named before Ironic set its fault"
    );
    assert_eq!(statuses(&ev, &uuids[0]).last().map(|s| s.0.as_str()), Some("ok"));

    // 3. --fail-fast: node 1 made undecided (its conductor group has no conductor: no conductor
    //    takes it over); the check stops at the first failing node instead of waiting for it
    tgt.exec(&format!("UPDATE nodes SET conductor_group = 'nobody-here' WHERE uuid = '{}'", uuids[0])).await;
    let started = Instant::now();
    let out = verify(&["--fail-fast"]);
    let took = started.elapsed();
    let text = out.stdout.clone();
    assert_eq!(out.code, 4, "{text}{}", out.stderr);
    assert!(took < Duration::from_secs(45), "{took:?}\n{text}");
    assert!(text.contains("stopped at the first failing node (--fail-fast)"), "{text}");
    let row1 = text.lines().find(|l| l.starts_with(uuids[0].as_str())).unwrap();
    assert!(row1.contains("pending") && row1.contains("not decided"), "{row1}");
    // the table: the records naming the wrong-password node, repeats counted once
    assert!(text.contains(&format!("log records naming {} (", uuids[3])), "{text}");
    let stderr = out.stderr;
    assert!(stderr.contains("failing after 0:") && stderr.contains(uuids[3].as_str()), "{stderr}");
}
