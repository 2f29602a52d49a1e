//! `migrate --via api` against a real Ironic interrupted (common/api_load.rs): SIGKILL at several
//! points, then a rerun, ends in the same final state as an uninterrupted run; Ironic itself stopped
//! mid-run ends the run at once with one message, and with Ironic back a rerun finishes.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::api_load::{expected_state, final_state, wait_nodes, Env};
use crate::common::process::Guard;
use crate::common::{server_env, IRONIC_VENV};

/// When to SIGKILL a run, judged on Ironic's node list.
type KillPoint = Box<dyn Fn(&[Value]) -> bool>;

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_at_several_points_then_rerun_ends_like_an_uninterrupted_run() {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let venv = PathBuf::from(venv);
    let mut env = Env::start(&venv, 9, "127.0.0.13", None).await;

    // Ironic itself (API and conductor) stops mid-run: the tool ends, without hanging, saying it
    // cannot reach Ironic; started again, the runs below resume from where it stopped
    let mut c = env.migrate_cmd();
    c.args(["--concurrency", "2"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    let mut child = Guard::spawn(&mut c);
    wait_nodes(&env, |n| n.len() >= 2).await;
    let mut status = None;
    env.restart_ironic_after(|| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while status.is_none() {
            status = child.try_wait();
            assert!(Instant::now() < deadline, "the tool still runs 120 s after Ironic stopped");
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .await;
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.take_stderr(), &mut stderr).unwrap();
    assert_ne!(status.unwrap().code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(&env.ironic.base.replace("http://", "")), "names Ironic: {stderr}");
    eprintln!("Ironic stopped mid-run:\n{stderr}");

    let points: Vec<KillPoint> = vec![
        // right after the first enroll
        Box::new(|n: &[Value]| !n.is_empty()),
        // with nodes mid-way (some manageable or further, not all done)
        Box::new(|n: &[Value]| n.iter().filter(|x| x["provision_state"] != "enroll").count() >= 3),
        // with most of them done
        Box::new(|n: &[Value]| {
            n.iter().filter(|x| x["provision_state"] == "active" || x["provision_state"] == "available").count() >= 6
        }),
    ];
    for (k, pred) in points.into_iter().enumerate() {
        let mut c = env.migrate_cmd();
        c.args(["--concurrency", "2"]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        let mut child = Guard::spawn(&mut c);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if pred(&env.nodes().await) || Instant::now() > deadline {
                break;
            }
            if child.try_wait().is_some() {
                break; // finished before the point: fine, the next rerun has less to do
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        child.kill(); // SIGKILL
        let states: Vec<String> = env.nodes().await.iter().map(|n| n["provision_state"].to_string()).collect();
        eprintln!("killed at point {k}: {states:?}");
    }
    wait_nodes(&env, |n| n.iter().all(|x| x["target_provision_state"].is_null())).await;
    let out = env.migrate();
    assert_eq!(out.code, 0, "{}", out.text());
    let states = final_state(&env).await;
    let brief: Vec<_> = states.iter().map(|(u, s, i, _, _)| (u.clone(), s.clone(), i.clone())).collect();
    assert_eq!(brief, expected_state(9), "the same final state as an uninterrupted run");
    assert!(states.iter().all(|s| s.4.len() == 2 && !s.3), "two ports each, none in maintenance: {states:?}");
    let out = env.run(&["verify"]);
    assert_eq!(out.code, 0, "{}", out.text());
    assert!(env.bmc.power_actions().is_empty(), "{:?}", env.bmc.power_actions());
}

/// Ironic stopped in the middle of `migrate --via api`: the run ends within 10 s with one message
/// that names Ironic and says how to resume (not a failed line and an error chain per remaining
/// node), and with Ironic back the rerun finishes every node as an uninterrupted run would.
#[tokio::test(flavor = "multi_thread")]
async fn ironic_stopped_mid_run_ends_it_with_one_message_and_a_rerun_finishes() {
    use std::process::Stdio;
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let mut env = Env::start(&PathBuf::from(venv), 12, "127.0.0.14", None).await;
    let mut child =
        Guard::spawn(env.migrate_cmd().args(["--concurrency", "2"]).stdout(Stdio::piped()).stderr(Stdio::piped()));
    let settled = |n: &Value| n["provision_state"] == "active" || n["provision_state"] == "available";
    wait_nodes(&env, |nodes| nodes.iter().filter(|n| settled(n)).count() >= 2).await;
    let mut ended = None;
    env.restart_ironic_after(|| {
        let stopped = Instant::now();
        while stopped.elapsed() < Duration::from_secs(30) {
            if child.try_wait().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let took = stopped.elapsed();
        child.kill();
        ended = Some(took);
    })
    .await;
    let (took, out) = (ended.unwrap(), child.wait_with_output());
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(took < Duration::from_secs(10), "the run took {took:?} to end after Ironic stopped: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("stopped answering").count(), 1, "one message naming Ironic: {err}");
    assert!(err.contains(&env.ironic.base) && err.contains("run `bm2ironic migrate --via api` again"), "{err}");
    assert!(!err.contains("FAILED"), "no node is blamed for Ironic being down: {err}");

    // Ironic back: the rerun resumes the run and ends where an uninterrupted run ends
    let out = env.migrate();
    assert_eq!(out.code, 0, "{}", out.text());
    assert!(out.text().contains("Resuming run"), "{}", out.text());
    let states = final_state(&env).await;
    let brief: Vec<_> = states.iter().map(|(u, s, i, _, _)| (u.clone(), s.clone(), i.clone())).collect();
    assert_eq!(brief, expected_state(12));
}

/// One run at a time per target (issue #50 item 3): while a load through the API runs, a rollback
/// and a second load of the same Ironic are refused at once, naming the holder (before: the
/// rollback removed the nodes created so far and said so, the load then created the rest, and both
/// exited 0 with 27 of 33 nodes in no record; two loads both resumed one run and recorded nodes
/// FAILED that had reached their state). `BM2IRONIC_RACE_RUNS` rounds (3 by default; the issue asks
/// for 10 once): after each, every node in Ironic is in the run's record (`verify` finds no
/// difference), and the rollback alone then empties Ironic.
#[tokio::test(flavor = "multi_thread")]
async fn an_api_load_and_a_rollback_or_a_second_load_never_run_at_once() {
    use crate::common::Outcome;
    use std::process::Stdio;
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let env = Env::start(&PathBuf::from(venv), 6, "127.0.0.18", None).await;
    const HELD: &str = "another bm2ironic load or rollback through the API is running";
    let rounds: usize = std::env::var("BM2IRONIC_RACE_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
    for round in 0..rounds {
        let mut c = env.migrate_cmd();
        c.args(["--concurrency", "2"]).stdout(Stdio::null()).stderr(Stdio::piped());
        let load = Guard::spawn(&mut c);
        wait_nodes(&env, |n| !n.is_empty()).await;
        let rollback = env.run(&["rollback", "--yes"]);
        let second = Outcome::of(&mut env.migrate_cmd());
        let load = load.wait_with_output();
        assert!(load.status.success(), "round {round}: {}", String::from_utf8_lossy(&load.stderr));
        assert_eq!(rollback.code, 1, "round {round}: {}", rollback.text());
        assert!(rollback.stderr.contains(HELD) && rollback.stderr.contains("migrate --via api"), "{}", rollback.stderr);
        assert_eq!(second.code, 1, "round {round}: {}", second.text());
        assert!(second.stderr.contains(HELD), "{}", second.stderr);
        assert_eq!(final_state(&env).await.len(), 6);
        let verify = env.run(&["verify"]);
        assert_eq!(verify.code, 0, "round {round}: every node is in the run's record: {}", verify.text());
        let rollback = Outcome::of(env.cmd(&["rollback", "--yes"]).env_remove("BM2IRONIC_NOVA_DB"));
        assert_eq!(rollback.code, 0, "round {round}: {}", rollback.text());
        assert!(rollback.stdout.contains("removed 6 nodes"), "{}", rollback.stdout);
        assert!(env.nodes().await.is_empty());
    }
}
