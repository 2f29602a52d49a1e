//! `bm2ironic verify`: compares what a run wrote with the Ironic database, nova_bm and (with
//! `--ironic-url`) the API (exit 4 on differences); `--takeover` then waits for Ironic to take every
//! migrated node over (exit 4 when one fails).

use std::io::IsTerminal;
use std::time::Duration;

use clap::Args;
use serde_json::json;

use crate::cli::output::{print, print_json, wire_name, Table};
use crate::cli::{exit, parse_duration, state_dir, Failure, GlobalArgs};
use crate::core::db::conf::ConnectionSettings;
use crate::core::ironic::api::ApiTarget;
use crate::core::ironic::api::IronicApi;
use crate::core::ironic::takeover::TakeoverState;
use crate::core::ironic::target;
use crate::core::migrate::load_api::{self, record::RunStore};
use crate::core::migrate::load_sql::RunRecord;
use crate::core::migrate::prepare::PrepareError;
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
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub timeout: String,
    /// Logs whose records name a node are shown with it (NAME=PATH, repeatable)
    #[arg(long = "log", value_name = "NAME=PATH")]
    pub logs: Vec<crate::core::logs::watch::WatchedLog>,
}

pub async fn run(global: &GlobalArgs, args: VerifyArgs) -> Result<(), Failure> {
    let settings = global.settings()?;
    let target = global.api_target(&settings)?;
    let VerifiedRun { run, report, api } = match api_run(global, &settings, args.run.as_deref(), &target).await? {
        Some(v) => v,
        None => steps::verify_with_api(&settings, args.run.as_deref(), &target).await?,
    };
    if let Some(w) = match &api {
        Some(api) => steps::scope_warning(api, &run).await,
        None => None,
    } {
        eprintln!("warning: {w}");
        tracing::warn!("{w}");
    }
    let takeover_failed = match (args.takeover, &api) {
        (false, _) => 0,
        (true, None) => {
            return Err(Failure::usage("--takeover asks the Ironic API: give --ironic-url, BM2IRONIC_IRONIC_URL or Keystone credentials (--os-cloud, OS_*)"))
        }
        (true, Some(api)) => {
            let timeout = parse_duration(&args.timeout).map_err(Failure::usage)?;
            takeover(&args, api, &run, timeout).await?
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
            "verify run {}: {} nodes, {} ports checked against the database and nova_bm{}: {} difference(s)\n",
            report.run_id,
            report.nodes_checked,
            report.ports_checked,
            if report.api_checked { " and the Ironic API" } else { "" },
            report.differences.len()
        ));
    }
    if !report.differences.is_empty() {
        return Err(Failure {
            code: exit::DIFFERENCES,
            message: format!(
                "{} difference(s) between what run {} wrote and what is there",
                report.differences.len(),
                report.run_id
            ),
        });
    }
    if takeover_failed > 0 {
        return Err(Failure {
            code: exit::DIFFERENCES,
            message: format!("{takeover_failed} node(s) not taken over cleanly by Ironic"),
        });
    }
    Ok(())
}

/// A run made through the API (recorded in the Ironic database, or without one in the state
/// directory) is verified against the API; None: a SQL run.
async fn api_run(
    global: &GlobalArgs,
    settings: &ConnectionSettings,
    run: Option<&str>,
    target: &ApiTarget,
) -> Result<Option<VerifiedRun>, Failure> {
    let store = match &settings.ironic_db {
        Some(u) => RunStore::Db(target::connect(&u.value).await?),
        None => RunStore::Dir(state_dir(global)),
    };
    let picked = store.pick(run).await;
    if let RunStore::Db(db) = &store {
        db.close().await;
    }
    match picked? {
        Some(r) => Ok(Some(load_api::verify::verify_api_from_settings(settings, r, target).await?)),
        // no database and no API run here: the usage error of old, with where API runs are looked for
        None if settings.ironic_db.is_none() => Err(Failure::usage(format!(
            "{} (no API run{} in {} either: for a run made with --via api give --state-dir)",
            PrepareError::NoTarget,
            run.map(|r| format!(" {r}")).unwrap_or_default(),
            state_dir(global).display()
        ))),
        None => Ok(None),
    }
}

/// `verify --takeover`: waits for Ironic to take the run's nodes over, shows each; returns the failed count.
async fn takeover(args: &VerifyArgs, api: &IronicApi, run: &RunRecord, timeout: Duration) -> Result<usize, Failure> {
    let tty = std::io::stderr().is_terminal();
    let nodes = steps::check_takeover(api, run, timeout, &args.logs, |n| {
        if tty {
            let ok = n.iter().filter(|x| x.state != TakeoverState::Pending).count();
            eprint!("\r  takeover: {ok}/{} nodes settled", n.len());
        }
    })
    .await;
    if tty {
        eprintln!();
    }
    let nodes = nodes?;
    let failed = nodes.iter().filter(|n| n.state == TakeoverState::Failed).count();
    if args.json {
        for n in &nodes {
            print_json(&json!({"event": "takeover", "node": n}));
        }
    } else {
        let mut t = Table::new(&[
            ("UUID", false),
            ("TAKEOVER", false),
            ("POWER", false),
            ("STATE", false),
            ("CONDUCTOR", false),
            ("PROBLEMS", false),
        ]);
        for n in &nodes {
            t.row(vec![
                n.uuid.clone(),
                wire_name(&n.state),
                n.power_state.clone().unwrap_or_else(|| "-".into()),
                n.provision_state.clone().unwrap_or_else(|| "-".into()),
                n.conductor.clone().unwrap_or_else(|| "-".into()),
                n.problems.join("; "),
            ]);
        }
        print(&t.render());
        for n in nodes.iter().filter(|n| !n.log_errors.is_empty()) {
            print(&format!("log records naming {}:\n", n.uuid));
            for e in &n.log_errors {
                print(&format!("  {e}\n"));
            }
        }
        print(&format!("takeover: {} of {} node(s) failed\n", failed, nodes.len()));
    }
    Ok(failed)
}
