//! The summary screen's tests (beside it: the screen is near the 600-line bound).

use super::*;
use crate::core::migrate::events::LoadSummary;
use crate::core::migrate::timing::Phases;
use crate::tui::screens::fixture;
use crate::tui::session::Mode;

#[test]
fn keys_go_to_logs_and_inventory() {
    let s = fixture::session(Mode::Rehearsal);
    let cx = fixture::ctx(&s);
    let mut sum = Summary::default();
    assert_eq!(sum.on_key(ch('L').event(), &cx), vec![Out::Go(Screen::Logs)]);
    assert_eq!(sum.on_key(ch('i').event(), &cx), vec![Out::Go(Screen::Inventory)]);
    assert_eq!(sum.on_key(ch('s').event(), &cx), vec![Out::Effect(Effect::WriteReport)]);
    assert!(sum.on_key(ch('x').event(), &cx).is_empty());
}

#[test]
fn snapshot() {
    let mut p = Progress::default();
    p.finish(Ok(crate::tui::screens::fixture::finished_with(LoadSummary {
        run_id: crate::core::migrate::run::RunId::parse("run-1").unwrap(),
        rehearse: false,
        committed: true,
        read: 36,
        created: 35,
        skipped: 1,
        already_migrated: 0,
        maintenance: 3,
        ports: 58,
        errors: 0,
        elapsed_ms: 1521.0,
        load_ms: 1480.5,
        commit_ms: 40.6,
        plan_checksum: "0123456789abcdef".into(),
        started_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 0).unwrap(),
        finished_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 2).unwrap(),
    })));
    p.nodes.push_back(crate::tui::work::NodeProgress {
        nova_bm_id: 7,
        uuid: "aaaaaaaa-0000-4000-8000-000000000007".into(),
        status: crate::tui::work::RowStatus::Done,
    });
    let sum = Summary {
        verify: Some(Ok("35 nodes, 58 ports: no differences".into())),
        takeover: None,
        verify_ms: Some(230.0),
        saved_to: Some("/srv/bm2ironic-resolutions.toml".into()),
        report: None,
        ..Default::default()
    };
    let mut logs = Logs::default();
    let line = |text: &str| crate::core::logs::follow::LogLine {
        source: "ironic".into(),
        level: crate::tui::work::Level::Error,
        text: text.into(),
        starts_record: true,
    };
    logs.push(vec![
        line("2024-01-01 12:00:01.000 42 ERROR ironic.conductor.manager [req-1] Failed to take over node aaaaaaaa-0000-4000-8000-000000000007: no image"),
        line("2024-01-01 12:00:02.000 42 ERROR ironic.conductor.manager [req-2] Node aaaaaaaa-0000-4000-8000-000000000007 power state unknown"),
        line("2024-01-01 12:00:03.000 42 ERROR ironic.conductor.manager [-] conductor lost its database"),
    ]);
    let phases = Phases {
        read_ms: Some(12.25),
        plan_ms: Some(3.1),
        load_ms: Some(1480.5),
        commit_ms: Some(40.6),
        verify_ms: Some(230.0),
    };
    let s = fixture::session(Mode::Live);
    let cx =
        DrawCtx { progress: &p, logs: &logs, phases, audit_log: Some("/var/log/bm2ironic"), ..fixture::draw_ctx(&s) };
    let text = fixture::draw(100, 26, &sum, &cx);
    assert!(text.contains("read 12 ms · plan 3.1 ms · load 1.48 s · commit 41 ms · verify 230 ms"), "{text}");
    assert!(text.contains("aaaaaaaa (nova_bm 7)") && text.contains("(+1 more)"), "{text}");
    insta::assert_snapshot!(text);
}

fn finished(rehearse: bool) -> Progress {
    let mut p = Progress::default();
    p.finish(Ok(crate::tui::screens::fixture::finished_with(LoadSummary {
        run_id: crate::core::migrate::run::RunId::parse("6f1c2a9e-run").unwrap(),
        rehearse,
        committed: !rehearse,
        read: 36,
        created: 35,
        skipped: 1,
        already_migrated: 0,
        maintenance: 3,
        ports: 58,
        errors: 0,
        elapsed_ms: 1521.0,
        load_ms: 1480.5,
        commit_ms: 40.6,
        plan_checksum: "0123456789abcdef".into(),
        started_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 0).unwrap(),
        finished_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 2).unwrap(),
    })));
    p
}

/// The next steps follow the run: a rehearsal says nothing stayed and how to load for real, a
/// live Juno run names its run id, the hosts move first and juno-boot, a modern one neither
/// ClusteredComputeManager nor juno-boot; at 80x24 the summary scrolls and says where it is.
#[test]
fn next_steps_follow_the_run_at_80x24_and_120x36() {
    use crate::core::ironic::target::TargetKind;
    use crate::core::migrate::next_steps::Flavors;
    let cases = [
        ("rehearsal", true, TargetKind::Juno, Flavors::Pending),
        ("live_juno", false, TargetKind::Juno, Flavors::Applied("cs-42".into())),
        ("live_modern", false, TargetKind::Modern, Flavors::Pending),
    ];
    for (name, rehearse, kind, flavors) in cases {
        let p = finished(rehearse);
        let facts = RunFacts {
            kind: Some(kind),
            rehearsal: rehearse,
            committed: !rehearse,
            run_id: Some("6f1c2a9e-run".into()),
            resolutions: Some("/srv/decisions.toml".into()),
            flavors,
            instances: 11,
            ironic_url: Some("http://ironic-api:6385".into()),
            conductor_log: Some("/var/log/ironic/ironic-conductor.log".into()),
            plan_args: vec!["--deploy-kernel glance-k".into(), "--default-arch x86_64".into()],
            flavor_args: vec!["--resource-class baremetal".into()],
            ..Default::default()
        };
        let sum = Summary { facts: Some(facts), saved_to: Some("/srv/decisions.toml".into()), ..Default::default() };
        let s = fixture::session(if rehearse { Mode::Rehearsal } else { Mode::Live });
        let cx = DrawCtx { progress: &p, audit_log: Some("/var/log/bm2ironic"), ..fixture::draw_ctx(&s) };
        let big = fixture::draw(120, 36, &sum, &cx);
        let small = fixture::draw(80, 22, &sum, &cx);
        match name {
            "rehearsal" => {
                assert!(big.contains("Nothing stayed") && big.contains("--resolutions /srv/decisions.toml"), "{big}");
                assert!(!big.contains("rollback") && !big.contains("Start ironic"), "{big}");
            }
            "live_juno" => {
                assert!(big.contains("rollback --run 6f1c2a9e-run") || small.contains("Summary: lines"), "{big}");
                assert!(big.contains("juno-boot") && big.contains("11 instance(s)"), "{big}");
                assert!(big.contains("✓ Flavors changed (change set cs-42)"), "{big}");
            }
            _ => assert!(!big.contains("juno-boot") && !big.contains("ClusteredComputeManager"), "{big}"),
        }
        if !rehearse {
            assert!(small.contains("Summary: lines 1-20 of"), "80 columns scroll, with a mark: {small}");
        }
        insta::assert_snapshot!(format!("next_steps_{name}_120x36"), big);
        insta::assert_snapshot!(format!("next_steps_{name}_80x24"), small);
    }
    // scrolling moves the window, never past the end
    let p = finished(false);
    let facts = RunFacts { kind: Some(TargetKind::Juno), committed: true, instances: 3, ..Default::default() };
    let mut sum = Summary { facts: Some(facts), ..Default::default() };
    let s = fixture::session(Mode::Live);
    let cx = DrawCtx { progress: &p, ..fixture::draw_ctx(&s) };
    let _ = fixture::draw(80, 22, &sum, &cx);
    let ctx = fixture::ctx(&s);
    for _ in 0..100 {
        sum.on_key(code(KeyCode::PageDown).event(), &ctx);
    }
    let bottom = fixture::draw(80, 22, &sum, &cx);
    assert!(bottom.contains("rollback --run RUN") && !bottom.contains("↓ more"), "{bottom}");
}

#[test]
fn the_takeover_line_follows_the_check() {
    use std::time::Duration;
    let (a, b) = ("bbbbbbbb-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000004");
    let mut t = TakeoverView::default();
    t.on_event(TakeoverEvent::Started { nodes: 2, timeout: Duration::from_secs(300) });
    assert_eq!((t.counts.waiting, t.counts.timeout), (2, Duration::from_secs(300)));
    let node = |uuid: &str, state, reason: Option<&str>| TakeoverEvent::Node {
        uuid: uuid.into(),
        state,
        reason: reason.map(String::from),
        elapsed: Duration::from_secs(3),
    };
    t.on_event(node(b, TakeoverState::Failed, Some("bmc-error: IPMI Error encountered, retrying")));
    t.on_event(node(a, TakeoverState::Ok, None));
    let c = Counts {
        taken_over: 1,
        failing: 1,
        elapsed: Duration::from_secs(4),
        timeout: Duration::from_secs(300),
        ..Counts::default()
    };
    t.on_event(TakeoverEvent::Progress(c));
    assert_eq!(t.failing, vec![(b.to_string(), "bmc-error: IPMI Error encountered, retrying".to_string())]);
    let mut p = Progress::default();
    p.finish(Ok(crate::tui::screens::fixture::finished_with(LoadSummary {
        run_id: crate::core::migrate::run::RunId::parse("run-1").unwrap(),
        rehearse: false,
        committed: true,
        read: 2,
        created: 2,
        skipped: 0,
        already_migrated: 0,
        maintenance: 0,
        ports: 4,
        errors: 0,
        elapsed_ms: 900.0,
        load_ms: 880.0,
        commit_ms: 20.0,
        plan_checksum: "0123456789abcdef".into(),
        started_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 0).unwrap(),
        finished_at: chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap().and_hms_opt(2, 0, 1).unwrap(),
    })));
    let sum = Summary {
        verify: Some(Ok("2 nodes, 4 ports: no differences".into())),
        takeover: Some(t.clone()),
        verify_ms: None,
        saved_to: None,
        report: None,
        ..Default::default()
    };
    let s = fixture::session(Mode::Live);
    let cx = DrawCtx { progress: &p, ..fixture::draw_ctx(&s) };
    let draw = |sum: &Summary| fixture::draw(100, 20, sum, &cx);
    let running = draw(&sum);
    assert!(
        running.contains("Takeover       1 taken over, 0 waiting, 1 failing - 0:04 elapsed, deadline 5:00"),
        "{running}"
    );
    assert!(running.contains("failing bbbbbbbb-0000-4000-8000-000000000004: bmc-error: IPMI Error"), "{running}");
    // a node that recovers leaves the failing list
    t.on_event(node(b, TakeoverState::Ok, None));
    assert!(t.failing.is_empty());
    let mut ended = sum.clone();
    ended.takeover.as_mut().unwrap().ended = Some(Ok(Ending::AllDecided));
    insta::assert_snapshot!(draw(&ended));
}

/// A takeover error longer than the screen is wrapped under its node, whole (it was cut at the edge:
/// "Failed to pre..."), at 80 and 120 columns; a megabyte line stops after a few lines and says where
/// the rest is.
#[test]
fn a_long_takeover_error_wraps_under_its_node() {
    let uuid = "aaaaaaaa-0000-4000-8000-000000000007";
    let why = format!(
        "Failed to prepare to deploy: Image https://glance.example:9292/v2/images/0b1e9c57 could not be \
         downloaded for node {uuid}: HTTP 503 Service Unavailable after 3 attempts (last error: \
         connection reset by peer); the conductor gives up and leaves the node in deploy failed"
    );
    let line = |text: String| crate::core::logs::follow::LogLine {
        source: "ironic".into(),
        level: crate::tui::work::Level::Error,
        text,
        starts_record: true,
    };
    let mut logs = Logs::default();
    logs.push(vec![line(format!("2024-01-01 12:00:01.000 42 ERROR ironic.conductor.manager [req-1] {why}"))]);
    let mut p = finished(false);
    p.nodes.push_back(crate::tui::work::NodeProgress {
        nova_bm_id: 7,
        uuid: uuid.into(),
        status: crate::tui::work::RowStatus::Done,
    });
    let s = fixture::session(Mode::Live);
    let sum = Summary::default();
    let cx = DrawCtx { progress: &p, logs: &logs, ..fixture::draw_ctx(&s) };
    for width in [80u16, 120] {
        let text = fixture::draw(width, 60, &sum, &cx);
        let inside = text.replace('│', " ");
        let shown: Vec<&str> = inside.split_whitespace().collect();
        let shown = shown.join(" ");
        assert!(shown.contains(&why.split_whitespace().collect::<Vec<_>>().join(" ")), "{width} columns:\n{text}");
        assert!(!text.contains('…'), "{width} columns: nothing cut:\n{text}");
        if width == 120 {
            insta::assert_snapshot!("a_long_takeover_error_wrapped_120", fixture::draw(120, 36, &sum, &cx));
        }
    }
    // a megabyte: a few lines, and where the rest is
    let mut huge = Logs::default();
    huge.push(vec![line(format!(
        "2024-01-01 12:00:01.000 42 ERROR ironic.conductor.manager [-] {uuid} {}",
        "x ".repeat(1 << 19)
    ))]);
    let cx = DrawCtx { progress: &p, logs: &huge, ..fixture::draw_ctx(&s) };
    let text = fixture::draw(120, 60, &sum, &cx);
    let rows = text.lines().filter(|l| l.contains("x x x")).count();
    assert!((4..=ERROR_CHARS / (120 - 28) + 1).contains(&rows), "{rows} rows:\n{text}");
    assert!(text.contains("(L: the whole line)"), "{text}");
}
