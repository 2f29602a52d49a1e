//! `bm2ironic watch`: follows the Ironic conductor and nova-compute logs after the load and reports
//! takeover trouble per record (exit 4 when any takeover error was seen, 0 otherwise), so a script
//! can gate on it: `bm2ironic watch --for 10m && echo takeover clean`.

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::cli::args::{parse_duration, GlobalArgs, DEFAULT_COMPUTE_LOG, DEFAULT_CONDUCTOR_LOG};
use crate::cli::failure::Failure;
use crate::cli::output::note;
use crate::core::kind::Kind;
use crate::core::logs::follow::LogLevel;
use crate::core::logs::watch::{Patterns, Start, WatchedLog};
use crate::core::text::visible_line;

#[derive(Args, Debug, Default)]
pub struct WatchArgs {
    /// A log to follow, NAME=PATH (repeatable; default ironic=/var/log/ironic/ironic-conductor.log and
    /// nova-compute=/var/log/nova/nova-compute.log)
    #[arg(long = "log", value_name = "NAME=PATH")]
    pub logs: Vec<WatchedLog>,
    /// Stop after this long (e.g. 90s, 10m, 1h); default: until Ctrl-C
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Read from this time on (`YYYY-MM-DD HH:MM:SS`) instead of from the end
    #[arg(long, value_name = "TIME", conflicts_with = "from_start", value_parser = parse_since)]
    pub since: Option<chrono::NaiveDateTime>,
    /// Read the files from their beginning
    #[arg(long)]
    pub from_start: bool,
    /// Classification patterns (TOML; default: the built-in assets/takeover-patterns.toml)
    #[arg(long, value_name = "FILE")]
    pub patterns: Option<PathBuf>,
    /// Tie records to the nodes this run wrote (needs the Ironic DB; default: the newest run)
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// Show every record, not only warnings and errors
    #[arg(long)]
    pub all: bool,
    /// NDJSON: one event per record, ending with a summary line
    #[arg(long)]
    pub json: bool,
}

/// `--since`, parsed by clap: a time as oslo.log writes it (`YYYY-MM-DD HH:MM:SS`, fractions
/// allowed).
fn parse_since(t: &str) -> Result<chrono::NaiveDateTime, String> {
    t.trim()
        .split_once(' ')
        .and_then(|(d, tm)| crate::core::logs::oslo::parse_time(d, tm))
        .ok_or_else(|| "expected YYYY-MM-DD HH:MM:SS".to_string())
}

pub async fn run(global: &GlobalArgs, args: WatchArgs) -> Result<(), Failure> {
    let duration = args.duration;
    let start = if args.from_start {
        Start::Beginning
    } else if let Some(t) = args.since {
        Start::Since(t)
    } else {
        Start::End
    };
    let patterns = match &args.patterns {
        Some(p) => Patterns::load(p)?,
        None => Patterns::default_set(),
    };
    let logs = if args.logs.is_empty() {
        vec![
            WatchedLog { name: "ironic".into(), path: DEFAULT_CONDUCTOR_LOG.into() },
            WatchedLog { name: "nova-compute".into(), path: DEFAULT_COMPUTE_LOG.into() },
        ]
    } else {
        args.logs.clone()
    };
    for l in &logs {
        // a directory or a device would follow nothing and report a false all-clear
        if let Ok(meta) = std::fs::metadata(&l.path) {
            if !meta.is_file() {
                return Err(Failure::usage(format!(
                    "--log {}={}: not a regular file (give the log file itself, e.g. {})",
                    l.name,
                    l.path.display(),
                    DEFAULT_CONDUCTOR_LOG
                )));
            }
        }
        if !l.path.exists() {
            note(&format!(
                "warning: {} ({}) does not exist yet: it is read from its start when it appears",
                l.path.display(),
                l.name
            ));
        }
    }
    // the migrated nodes: the run's, of either path, where runs are kept (the Ironic database when
    // given, else the state directory's API runs), as `verify` finds them
    let mut migrated: HashSet<String> = HashSet::new();
    let settings = global.settings()?;
    let store = crate::core::migrate::steps::run_store(&settings, global.state_dir()).await?;
    let found = crate::core::using(store, async |store| store.find(args.run.as_deref()).await).await;
    match found {
        Ok(run) => migrated = run.written.iter().map(|w| w.uuid.to_ascii_lowercase()).collect(),
        // a run the operator named must exist; without --run, no run yet is fine
        Err(e) if args.run.is_some() => return Err(e.into()),
        Err(_) => {}
    }
    tracing::info!(logs = ?logs.iter().map(|l| l.path.display().to_string()).collect::<Vec<_>>(), migrated = migrated.len(), "watch started");

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        match duration {
            Some(d) => {
                tokio::select! { _ = tokio::time::sleep(d) => {}, _ = tokio::signal::ctrl_c() => {} }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        c2.cancel();
    });
    let task = {
        let logs = logs.clone();
        tokio::spawn(
            async move { crate::core::logs::watch::watch(&logs, start, &patterns, &migrated, tx, cancel).await },
        )
    };
    let (mut records, mut errors) = (0usize, 0usize);
    let mut error_nodes: Vec<String> = Vec::new();
    let mut out = std::io::stdout().lock();
    while let Some(r) = rx.recv().await {
        records += 1;
        if r.takeover_error {
            errors += 1;
            for n in &r.nodes {
                if !error_nodes.contains(n) {
                    error_nodes.push(n.clone());
                }
            }
            tracing::warn!(source = %r.source, category = ?r.category, nodes = ?r.nodes, "takeover error: {}", r.message);
        }
        if args.json {
            let _ = writeln!(out, "{}", crate::core::text::json::to_line(&json!({"event": "record", "record": r})));
        } else if args.all || r.level >= LogLevel::Warning || r.category.is_some() {
            let nodes = if r.nodes.is_empty() {
                String::new()
            } else {
                format!(" [{}{}]", r.nodes.join(","), if r.migrated_node { " migrated" } else { "" })
            };
            // anyone who can make Ironic log a string can write here: show, never emit, controls;
            // and a 50 MB line is a screenful, not 50 MB
            let _ = writeln!(
                out,
                "{} {:<7} {:<12} {:<24} {}{}{}",
                r.time.map(|t| t.format("%H:%M:%S").to_string()).unwrap_or_else(|| "--:--:--".into()),
                r.level.as_str(),
                visible_line(&r.source),
                visible_line(r.category.as_deref().unwrap_or("-")),
                if r.takeover_error { "!! " } else { "" },
                visible_line(&capped(&r.message)),
                nodes
            );
            if r.takeover_error && !r.traceback.is_empty() {
                let _ = writeln!(
                    out,
                    "    ({} traceback lines; last: {})",
                    r.traceback.len(),
                    visible_line(&capped(r.traceback.last().map(|s| s.trim()).unwrap_or("")))
                );
            }
        }
        let _ = out.flush();
    }
    task.await.map_err(|e| Failure::runtime(format!("watch task failed: {e}")))??;
    // a log that never appeared was not watched: "0 takeover errors" would be ten minutes of false calm
    let not_watched: Vec<String> = logs
        .iter()
        .filter(|l| !l.path.is_file())
        .map(|l| format!("{} ({}: no such file)", l.name, l.path.display()))
        .collect();
    if args.json {
        let _ = writeln!(
            out,
            "{}",
            crate::core::text::json::to_line(
                &json!({"event": "summary", "records": records, "takeover_errors": errors, "nodes_with_errors": error_nodes, "not_watched": not_watched})
            )
        );
    } else {
        let _ = writeln!(
            out,
            "watch: {records} records, {errors} takeover error(s){}{}",
            if error_nodes.is_empty() { String::new() } else { format!(" on {}", error_nodes.join(", ")) },
            if not_watched.is_empty() {
                String::new()
            } else {
                format!("; NOT WATCHED: {}", visible_line(&not_watched.join(", ")))
            }
        );
    }
    if errors > 0 {
        Err(Failure::of(Kind::Differences, format!("{errors} takeover error(s) seen")))
    } else if !not_watched.is_empty() {
        Err(Failure::runtime(format!(
            "not every log was watched: {} (check the path, or start watch once the service has created its log)",
            not_watched.join(", ")
        )))
    } else {
        Ok(())
    }
}

/// At most [`SHOWN`] bytes of a log message on the terminal, with a marker for the rest.
const SHOWN: usize = 2000;

fn capped(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= SHOWN {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut cut = SHOWN;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    std::borrow::Cow::Owned(format!("{} [... {} bytes more]", &text[..cut], text.len() - cut))
}
