//! `bm2ironic verify`: compares what a run wrote with the Ironic database, nova_bm and (with
//! `--ironic-url`) the API (exit 4 on differences); `--takeover` then follows Ironic's takeover of
//! every migrated node, showing it while it waits, until each is taken over or failing (exit 4 when
//! one fails).

use std::io::IsTerminal;
use std::time::Duration;

use clap::Args;
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use crate::cli::args::{parse_duration, GlobalArgs};
use crate::cli::failure::Failure;
use crate::cli::output::{note, note_inline, print, print_json, wire_name, Table};
use crate::core::ironic::api::IronicApi;
use crate::core::ironic::verdict::{Counts, Ending, TakeoverEvent, TakeoverOutcome, TakeoverState};
use crate::core::kind::Kind;
use crate::core::migrate::run::record::RunRecord;
use crate::core::migrate::steps::{self, VerifiedRun};

#[derive(Args, Debug, Default)]
pub struct VerifyArgs {
    /// The run to verify (default: the newest committed one)
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// NDJSON events, one per difference, ending with a summary line
    #[arg(long)]
    pub json: bool,
    /// Also wait for Ironic to take every migrated node over (needs --ironic-url): a power state read
    /// from the BMC, no last_error or fault, not stuck, a conductor
    #[arg(long)]
    pub takeover: bool,
    /// How long --takeover waits (e.g. 90s, 10m)
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Logs to follow while waiting (NAME=PATH, repeatable): a node whose BMC errors appear in them
    /// is failing at once; the records naming a node are shown with it, repeats collapsed
    #[arg(long = "log", value_name = "NAME=PATH")]
    pub logs: Vec<crate::core::logs::watch::WatchedLog>,
    /// With --takeover: stop at the first failing node (default: when every node is taken over or
    /// failing, or at the --timeout)
    #[arg(long)]
    pub fail_fast: bool,
}

pub async fn run(global: &GlobalArgs, args: VerifyArgs) -> Result<(), Failure> {
    let settings = global.settings()?;
    let target = global.api_target(&settings)?;
    let VerifiedRun { run, report, api } =
        steps::verify(&settings, args.run.as_deref(), &target, global.state_dir(), None).await?;
    if let Some(w) = match &api {
        Some(api) => steps::scope_warning(api, &run).await,
        None => None,
    } {
        note(&format!("warning: {w}"));
        tracing::warn!("{w}");
    }
    let takeover_counts = match (args.takeover, &api) {
        (false, _) => Counts::default(),
        (true, None) => {
            return Err(Failure::usage("--takeover asks the Ironic API: give --ironic-url, BM2IRONIC_IRONIC_URL or Keystone credentials (--os-cloud, OS_*)"))
        }
        (true, Some(api)) => {
            takeover(&args, api, &run, args.timeout).await?
        }
    };
    if args.json {
        for d in &report.differences {
            print_json(
                &json!({"event": "difference", "uuid": d.uuid, "nova_bm_id": d.nova_bm_id, "against": d.against, "field": d.field, "expected": d.expected, "found": d.found}),
            );
        }
        print_json(
            &json!({"event": "summary", "run_id": report.run_id, "nodes": report.nodes_checked, "ports": report.ports_checked, "api": report.api_checked, "differences": report.differences.len()}),
        );
    } else {
        if !report.differences.is_empty() {
            let mut t = Table::new(&[
                ("NOVA_BM_ID", true),
                ("UUID", false),
                ("AGAINST", false),
                ("FIELD", false),
                ("EXPECTED", false),
                ("FOUND", false),
            ]);
            for d in &report.differences {
                t.row(vec![
                    d.nova_bm_id.to_string(),
                    d.uuid.clone(),
                    d.against.into(),
                    d.field.clone(),
                    d.expected.clone(),
                    d.found.clone(),
                ]);
            }
            print(&t.render());
        }
        print(&format!(
            "verify run {}: {} nodes, {} ports checked against {}: {} difference(s)\n",
            report.run_id,
            report.nodes_checked,
            report.ports_checked,
            report.against(),
            report.differences.len()
        ));
    }
    if !report.differences.is_empty() {
        let message = format!(
            "{} difference(s) between what run {} wrote and what is there",
            report.differences.len(),
            report.run_id
        );
        return Err(Failure::of(Kind::Differences, message));
    }
    match takeover_failure(&takeover_counts) {
        Some(message) => Err(Failure::of(Kind::Differences, message)),
        None => Ok(()),
    }
}

/// Why the takeover check fails the command (exit 4): a node failing, or one still undecided when
/// the check ended. None when every node is taken over or held.
fn takeover_failure(c: &Counts) -> Option<String> {
    match (c.failing, c.waiting) {
        (0, 0) => None,
        (0, w) => Some(format!("{w} node(s) not taken over by Ironic when the check ended (undecided; none failing)")),
        (f, 0) => Some(format!("{f} node(s) failing the takeover by Ironic")),
        (f, w) => Some(format!("{f} node(s) failing the takeover by Ironic, {w} undecided")),
    }
}

/// `verify --takeover`: follows Ironic's takeover of the run's nodes, shows it while it waits (a
/// status line on a terminal, NDJSON status events with `--json`), then each node; returns the
/// final counts.
async fn takeover(args: &VerifyArgs, api: &IronicApi, run: &RunRecord, timeout: Duration) -> Result<Counts, Failure> {
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    let check = async move {
        let r = steps::check_takeover(api, run, timeout, args.fail_fast, &args.logs, &tx, &cancel).await;
        drop(tx);
        r
    };
    let mut live = Live { tty: std::io::stderr().is_terminal(), json: args.json, status_shown: false };
    let show = async {
        while let Some(ev) = rx.recv().await {
            live.event(&ev);
        }
        live.clear();
    };
    let (outcome, ()) = tokio::join!(check, show);
    let outcome = outcome?;
    if args.json {
        for n in &outcome.nodes {
            print_json(&json!({"event": "takeover", "node": n}));
        }
        let c = counts(&outcome);
        print_json(
            &json!({"event": "takeover-end", "ending": outcome.ending, "elapsed_s": secs(outcome.elapsed), "taken_over": c.taken_over, "held": c.held, "waiting": c.waiting, "failing": c.failing}),
        );
    } else {
        print(&render_takeover(&outcome, timeout));
    }
    Ok(counts(&outcome))
}

/// What `verify --takeover` shows while it waits.
struct Live {
    tty: bool,
    json: bool,
    /// a status line is on the terminal (to be rewritten)
    status_shown: bool,
}

impl Live {
    fn event(&mut self, ev: &TakeoverEvent) {
        match ev {
            TakeoverEvent::Started { nodes, timeout } if self.json => {
                print_json(&json!({"event": "takeover-started", "nodes": nodes, "timeout_s": timeout.as_secs()}))
            }
            TakeoverEvent::Node { uuid, state, reason, elapsed } => {
                if self.json {
                    print_json(
                        &json!({"event": "takeover-status", "uuid": uuid, "state": state, "reason": reason, "elapsed_s": secs(*elapsed)}),
                    );
                }
                if *state == TakeoverState::Failed && (self.tty || !self.json) {
                    self.clear();
                    note(&format!("  failing after {}: {uuid}: {}", clock(*elapsed), reason.as_deref().unwrap_or("-")));
                }
            }
            TakeoverEvent::Progress(c) if self.tty => {
                // one row: a wrapped line could not be rewritten in place
                let width = ratatui::crossterm::terminal::size().map(|(w, _)| w as usize).unwrap_or(80);
                let line: String = status_line(c).chars().take(width.saturating_sub(3)).collect();
                // the escape that clears the line is ours; the line itself goes through the discipline
                eprint!("\r\x1b[2K");
                note_inline(&format!("  {line}"));
                self.status_shown = true;
            }
            _ => {}
        }
    }

    fn clear(&mut self) {
        if self.status_shown {
            eprint!("\r\x1b[2K");
            self.status_shown = false;
        }
    }
}

fn secs(d: Duration) -> f64 {
    (d.as_millis() / 100) as f64 / 10.0
}

/// `m:ss`.
fn clock(d: Duration) -> String {
    format!("{}:{:02}", d.as_secs() / 60, d.as_secs() % 60)
}

/// The live status line: `takeover: 3 taken over, 1 waiting, 1 failing - 0:14 elapsed, deadline 5:00`.
fn status_line(c: &Counts) -> String {
    format!("takeover: {c}")
}

fn counts(o: &TakeoverOutcome) -> Counts {
    let mut c = Counts { elapsed: o.elapsed, ..Counts::default() };
    for n in &o.nodes {
        match n.state {
            TakeoverState::Ok => c.taken_over += 1,
            TakeoverState::HeldInMaintenance => c.held += 1,
            TakeoverState::Pending => c.waiting += 1,
            TakeoverState::Failed => c.failing += 1,
        }
    }
    c
}

/// `18:02:47`, or `-` when the record had no time.
fn time_of_day(t: Option<chrono::NaiveDateTime>) -> String {
    t.map(|t| t.format("%H:%M:%S").to_string()).unwrap_or_else(|| "-".into())
}

/// The final table, each node's log records collapsed (most specific first), and how it ended.
fn render_takeover(o: &TakeoverOutcome, timeout: Duration) -> String {
    let mut t = Table::new(&[
        ("UUID", false),
        ("TAKEOVER", false),
        ("POWER", false),
        ("STATE", false),
        ("CONDUCTOR", false),
        ("PROBLEMS", false),
    ]);
    for n in &o.nodes {
        t.row(vec![
            n.uuid.clone(),
            wire_name(&n.state),
            n.power_state.clone().unwrap_or_else(|| "-".into()),
            n.provision_state.clone().unwrap_or_else(|| "-".into()),
            n.conductor.clone().unwrap_or_else(|| "-".into()),
            n.problems.join("; "),
        ]);
    }
    let mut out = t.render();
    for n in o.nodes.iter().filter(|n| !n.log_errors.is_empty()) {
        let total: usize = n.log_errors.iter().map(|r| r.count).sum();
        out.push_str(&format!(
            "\nlog records naming {} ({total} record(s), {} distinct; most specific first):\n",
            n.uuid,
            n.log_errors.len()
        ));
        let mut r = Table::new(&[
            ("LEVEL", false),
            ("COUNT", true),
            ("FIRST", false),
            ("LAST", false),
            ("LOGGER", false),
            ("RECORD", false),
        ]);
        for e in &n.log_errors {
            let mut text = e.summary();
            if e.source != "ironic" {
                text = format!("[{}] {text}", e.source);
            }
            r.row(vec![
                e.level.as_str().into(),
                e.count.to_string(),
                time_of_day(e.first),
                time_of_day(e.last),
                e.logger.clone(),
                text,
            ]);
        }
        for line in r.render().lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    let c = counts(o);
    let ending = match o.ending {
        Ending::AllDecided => "every node decided".to_string(),
        Ending::FirstFailure => "stopped at the first failing node (--fail-fast)".to_string(),
        Ending::Deadline => format!("deadline of {} reached", clock(timeout)),
        Ending::Cancelled => "stopped".to_string(),
    };
    let held = if c.held > 0 { format!(", {} held in maintenance", c.held) } else { String::new() };
    // the verdict first, in the exit code's words: "0 failed" alone read as a pass while exiting 4
    let verdict = match takeover_failure(&c) {
        None => "every node taken over".to_string(),
        Some(why) => format!("NOT every node taken over: {why}"),
    };
    out.push_str(&format!(
        "\ntakeover: {verdict}\n  {} of {} node(s) taken over{held}, {} failing, {} undecided; {ending} after {}\n",
        c.taken_over,
        o.nodes.len(),
        c.failing,
        c.waiting,
        clock(o.elapsed)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ironic::tracker::Tracker;
    use crate::core::ironic::verdict::judge;
    use crate::core::logs::watch::{finish, Patterns, RecordBuilder};

    const NODES: [&str; 3] = [
        "bbbbbbbb-0000-4000-8000-000000000001",
        "bbbbbbbb-0000-4000-8000-000000000003",
        "bbbbbbbb-0000-4000-8000-000000000004",
    ];

    /// The conductor log of a node whose BMC refuses the password, as ironic 39 writes it.
    fn wrong_password_log(node: &str) -> String {
        let mut log = String::new();
        for (i, tmp) in ["tmph7ub9wob", "tmpow2ax60j", "tmp7wrubbq6", "tmp7eyo6ucd", "tmpq27js93s", "tmprf94dwjj"]
            .iter()
            .enumerate()
        {
            log.push_str(&format!(
                "2026-11-30 18:02:{:02}.453 26765 WARNING ironic.drivers.modules.ipmitool [None req-f3f21f15-787f-4718-8005-cbc32e8cf2c{i} - - - - - -] IPMI Error encountered, retrying \"ipmitool -I lanplus -H 127.0.0.1 -L ADMINISTRATOR -p 16593 -U admin -R 1 -N 1 -f /tmp/{tmp} power status\" for node {node}. Error: Unexpected error while running command.\nCommand: ipmitool -I lanplus -H 127.0.0.1 -L ADMINISTRATOR -p 16593 -U admin -R 1 -N 1 -f /tmp/{tmp} power status\nExit code: 1\nStdout: ''\nStderr: 'Error: Unable to establish IPMI v2 / RMCP+ session\\n': oslo_concurrency.processutils.ProcessExecutionError: Unexpected error while running command.\n",
                47 + i
            ));
        }
        log.push_str(&format!("2026-11-30 18:02:57.034 26765 ERROR ironic.drivers.modules.ipmitool [None req-f3f21f15-787f-4718-8005-cbc32e8cf2c2 - - - - - -] IPMI Error while attempting \"ipmitool -I lanplus -H 127.0.0.1 -L ADMINISTRATOR -p 16593 -U admin -R 1 -N 1 -f /tmp/tmp3kb_giwr power status\" for node {node}. Error: Unexpected error while running command.\nStderr: 'Error: Unable to establish IPMI v2 / RMCP+ session\\n': oslo_concurrency.processutils.ProcessExecutionError: Unexpected error while running command.\n"));
        for (t, attempt) in [("18:02:57.035", 1), ("18:03:09.112", 2)] {
            log.push_str(&format!("2026-11-30 {t} 26765 WARNING ironic.conductor.manager [None req-f3f21f15-787f-4718-8005-cbc32e8cf2c2 - - - - - -] During sync_power_state, could not get power state for node {node}, attempt {attempt} of 2. Error: IPMI call failed: power status..: ironic.common.exception.IPMIFailure: IPMI call failed: power status.\n"));
        }
        log
    }

    #[test]
    fn the_final_table_shows_each_node_and_its_records_collapsed() {
        let uuids: Vec<String> = NODES.iter().map(|u| u.to_string()).collect();
        let mut t = Tracker::new(&uuids);
        let node = |power: Option<&str>, prov: &str, extra: serde_json::Value| {
            let mut v = json!({"power_state": power, "provision_state": prov, "conductor": "bm2ironic-test-conductor"});
            v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            v
        };
        t.api(judge(NODES[0], &node(Some("power off"), "available", json!({}))));
        t.api(judge(
            NODES[1],
            &node(
                None,
                "active",
                json!({"maintenance": true, "maintenance_reason": "bm2ironic: nova_bm task_state was 'building'"}),
            ),
        ));
        t.api(judge(NODES[2], &node(None, "available", json!({}))));
        let mut b = RecordBuilder::new("ironic");
        let migrated = uuids.iter().cloned().collect();
        let log = wrong_password_log(NODES[2]);
        let mut records: Vec<_> = log.lines().filter_map(|l| b.push(l)).collect();
        records.extend(b.flush());
        for r in records {
            t.record(&finish(r, &Patterns::default_set(), &migrated));
        }
        let outcome =
            TakeoverOutcome { nodes: t.nodes(), ending: Ending::AllDecided, elapsed: Duration::from_secs(14) };
        let text = render_takeover(&outcome, Duration::from_secs(300));
        assert!(text.contains("  ERROR        1"), "the error first, the retries after: {text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn the_status_line_counts_and_times() {
        let c = Counts {
            taken_over: 3,
            held: 0,
            waiting: 1,
            failing: 1,
            elapsed: Duration::from_secs(74),
            timeout: Duration::from_secs(300),
        };
        assert_eq!(status_line(&c), "takeover: 3 taken over, 1 waiting, 1 failing - 1:14 elapsed, deadline 5:00");
        assert!(status_line(&Counts { held: 2, ..c }).contains("3 taken over, 2 held in maintenance, 1 waiting"));
    }

    #[test]
    fn the_takeover_line_and_the_exit_agree() {
        use crate::core::ironic::verdict::{NodeTakeover, TakeoverState};
        let node = |u: &str, state| {
            let mut n = NodeTakeover::waiting(u);
            n.state = state;
            n
        };
        // five taken over, two never decided, none failing: exit 4, and the text says why first
        let mut nodes: Vec<_> = (0..5).map(|k| node(&format!("u{k}"), TakeoverState::Ok)).collect();
        nodes.extend((5..7).map(|k| node(&format!("u{k}"), TakeoverState::Pending)));
        let o = TakeoverOutcome { nodes, ending: Ending::Deadline, elapsed: Duration::from_secs(300) };
        let text = render_takeover(&o, Duration::from_secs(300));
        let why = takeover_failure(&counts(&o)).expect("undecided nodes fail the check");
        assert!(why.starts_with("2 node(s) not taken over"), "{why}");
        assert!(text.contains(&format!("takeover: NOT every node taken over: {why}")), "{text}");
        assert!(!text.contains("0 of 7"), "{text}");
        // every node decided and none failing: a pass, said as one
        let o = TakeoverOutcome {
            nodes: (0..3).map(|k| node(&format!("u{k}"), TakeoverState::Ok)).collect(),
            ending: Ending::AllDecided,
            elapsed: Duration::from_secs(4),
        };
        assert_eq!(takeover_failure(&counts(&o)), None);
        assert!(render_takeover(&o, Duration::from_secs(300)).contains("takeover: every node taken over\n"));
    }
}
