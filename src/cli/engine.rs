//! `plan`, `migrate`, `verify`, `rollback`: the scriptable faces of the engine.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::table::Table;
use super::{exit, Failure, GlobalArgs};
use crate::core::db::conf::ConnectionSettings;
use crate::core::db::secret::Secret;
use crate::core::ironic::api::IronicApi;
use crate::core::ironic::target;
use crate::core::migrate::conflict::{ConflictCode, Resolutions};
use crate::core::migrate::load_sql::{self, LoadEvent, LoadRequest, NodeStatus};
use crate::core::migrate::plan::{FreeState, Plan, PlanOptions};
use crate::core::migrate::prepare::{self, PrepareError, Prepared};
use crate::core::migrate::rollback::{self, RollbackError};
use crate::core::migrate::verify;
use crate::core::source::nova_bm::NovaBmSource;

pub const ENV_IRONIC_TOKEN: &str = "BM2IRONIC_IRONIC_TOKEN";

#[derive(Args, Debug, Default, Clone)]
pub struct PlanArgs {
    /// Ironic deploy kernel (Glance id, or file:// for standalone Ironic)
    #[arg(long, value_name = "REF")]
    pub deploy_kernel: Option<String>,
    /// Ironic deploy ramdisk (Glance id, or file://)
    #[arg(long, value_name = "REF")]
    pub deploy_ramdisk: Option<String>,
    /// cpu_arch for nodes whose host has none (e.g. x86_64)
    #[arg(long, value_name = "ARCH")]
    pub default_arch: Option<String>,
    /// cpu_arch of one nova-compute host's nodes (repeatable)
    #[arg(long = "arch", value_name = "HOST=ARCH")]
    pub arch: Vec<String>,
    /// resource_class of the new nodes (modern Ironic; Nova schedules by it)
    #[arg(long, value_name = "NAME")]
    pub resource_class: Option<String>,
    /// State of free nodes in modern Ironic
    #[arg(long, value_name = "available|manageable|enroll", default_value = "available")]
    pub free_state: String,
    /// Load path: one SQL transaction (db) or Ironic's REST adopt flow (api)
    #[arg(long, value_name = "db|api", default_value = "db")]
    pub via: String,
    /// Decisions saved by the wizard (TOML)
    #[arg(long, value_name = "FILE")]
    pub resolutions: Option<PathBuf>,
    /// A decision for every conflict of a code (repeatable), e.g. duplicate-mac=skip-port
    #[arg(long = "resolve", value_name = "CODE=ACTION")]
    pub resolve: Vec<String>,
    /// Object versions to write when the target has no nodes and an unknown schema head
    #[arg(long, value_name = "NODE,PORT")]
    pub object_version: Option<String>,
    /// Machine-readable output
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug, Default)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Do everything, then roll the transaction back: nothing stays
    #[arg(long)]
    pub rehearse: bool,
    /// Do not ask for confirmation (required without a terminal)
    #[arg(long)]
    pub yes: bool,
}

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

#[derive(Args, Debug, Default)]
pub struct RollbackArgs {
    /// The run to remove (default: the newest committed one)
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// Remove even nodes Ironic has changed since the load
    #[arg(long)]
    pub force: bool,
    /// Do not ask for confirmation (required without a terminal)
    #[arg(long)]
    pub yes: bool,
    /// List the runs recorded in the Ironic database and exit
    #[arg(long)]
    pub list: bool,
    #[arg(long)]
    pub json: bool,
}

impl From<PrepareError> for Failure {
    fn from(e: PrepareError) -> Failure {
        Failure { code: if e.is_usage() { exit::USAGE } else { exit::RUNTIME }, message: e.to_string() }
    }
}

/// Plan options, the operator's decisions, and `--object-version`.
type Decided = (PlanOptions, Resolutions, Option<(String, String)>);

pub(crate) fn options(args: &PlanArgs, settings: &ConnectionSettings) -> Result<Decided, Failure> {
    let mut arch_by_host = BTreeMap::new();
    for a in &args.arch {
        let (h, v) = a
            .split_once('=')
            .ok_or_else(|| Failure::usage(format!("--arch {a}: expected HOST=ARCH, e.g. bm-compute-1=x86_64")))?;
        arch_by_host.insert(h.trim().to_string(), v.trim().to_string());
    }
    let free_state: FreeState =
        args.free_state.parse().map_err(|e: String| Failure::usage(format!("--free-state: {e}")))?;
    let mut resolutions = match &args.resolutions {
        Some(p) => Resolutions::load(p).map_err(|e| Failure::usage(e.to_string()))?,
        None => Resolutions::default(),
    };
    for r in &args.resolve {
        resolutions.add_flag(r).map_err(|e| Failure::usage(e.to_string()))?;
    }
    let object_version = args
        .object_version
        .as_deref()
        .map(target::parse_object_version)
        .transpose()
        .map_err(|e| Failure::usage(e.to_string()))?;
    let conf = settings.nova_conf.as_ref();
    let opts = PlanOptions {
        deploy_kernel: args.deploy_kernel.clone(),
        deploy_ramdisk: args.deploy_ramdisk.clone(),
        default_arch: args.default_arch.clone(),
        arch_by_host,
        resource_class: args.resource_class.clone(),
        free_state,
        baremetal: conf.map(|c| c.baremetal.clone()).unwrap_or_default(),
        conf_host: conf.and_then(|c| c.host.clone()),
    };
    Ok((opts, resolutions, object_version))
}

fn check_via(args: &PlanArgs) -> Result<(), Failure> {
    match args.via.as_str() {
        "db" => Ok(()),
        "api" => Err(Failure::usage(
            "--via api (Ironic's REST adopt flow) is not built yet: use --via db (one SQL transaction)",
        )),
        other => Err(Failure::usage(format!("--via {other}: expected db or api"))),
    }
}

async fn prepare_from(global: &GlobalArgs, args: &PlanArgs) -> Result<Prepared, Failure> {
    check_via(args)?;
    let settings = global.settings()?;
    let (opts, resolutions, ov) = options(args, &settings)?;
    Ok(prepare::prepare(&settings, &opts, &resolutions, ov.as_ref()).await?)
}

fn plan_json(p: &Plan) -> serde_json::Value {
    json!({
        "source": p.source,
        "target": {"kind": p.target.kind, "schema": p.target.schema, "existing_nodes": p.target.existing_nodes, "existing_ports": p.target.existing_ports},
        "nodes": p.nodes.iter().map(|n| json!({
            "uuid": n.uuid,
            "nova_bm_id": n.nova_bm_id,
            "service_host": n.service_host,
            "action": n.action,
            "provision_state": n.node.as_ref().and_then(|x| x.provision_state.clone()),
            "maintenance": n.node.as_ref().map(|x| x.maintenance).unwrap_or(false),
            "driver": n.node.as_ref().map(|x| x.driver.clone()),
            "ports": n.ports.iter().map(|p| p.address.clone()).collect::<Vec<_>>(),
            "conflicts": n.conflicts,
        })).collect::<Vec<_>>(),
        "conflicts": p.conflicts.iter().map(|c| json!({
            "code": c.code, "blocking": c.blocking, "node_uuid": c.node_uuid, "subject": c.subject,
            "detail": c.detail, "action": c.action, "decided_by": c.decided_by,
        })).collect::<Vec<_>>(),
        "warnings": p.warnings,
        "summary": {
            "create": p.summary.create, "skip": p.summary.skip, "already_migrated": p.summary.already_migrated,
            "blocked": p.summary.blocked, "maintenance": p.summary.maintenance, "active": p.summary.active,
            "ports": p.summary.ports, "blocking": p.summary.blocking,
        },
        "checksum": p.checksum,
    })
}

pub fn render_plan(p: &Plan) -> String {
    let mut t = Table::new(&[
        ("NOVA_BM_ID", true),
        ("UUID", false),
        ("HOST", false),
        ("ACTION", false),
        ("STATE", false),
        ("MAINT", false),
        ("PORTS", true),
        ("CONFLICTS", false),
    ]);
    for n in &p.nodes {
        t.row(vec![
            n.nova_bm_id.to_string(),
            n.uuid.clone().unwrap_or_else(|| "-".into()),
            n.service_host.clone().unwrap_or_else(|| "-".into()),
            serde_json::to_value(n.action).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
            n.node
                .as_ref()
                .map(|x| x.provision_state.clone().unwrap_or_else(|| "(none)".into()))
                .unwrap_or_else(|| "-".into()),
            if n.node.as_ref().is_some_and(|x| x.maintenance) { "yes".into() } else { "".into() },
            n.ports.len().to_string(),
            n.conflicts.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(","),
        ]);
    }
    let mut out = format!(
        "Target: {:?} Ironic (schema {}), {} existing nodes\n\n",
        p.target.kind, p.target.schema, p.target.existing_nodes
    );
    out.push_str(&t.render());
    if !p.conflicts.is_empty() {
        out.push_str("\nConflicts:\n");
        let mut by_code: BTreeMap<ConflictCode, Vec<&crate::core::migrate::conflict::Conflict>> = BTreeMap::new();
        for c in &p.conflicts {
            by_code.entry(c.code).or_default().push(c);
        }
        for (code, list) in by_code {
            let open = list.iter().filter(|c| c.is_unresolved_blocking()).count();
            let actions: Vec<&str> = code.actions().iter().map(|a| a.as_str()).collect();
            out.push_str(&format!(
                "  {code} ({}{}; actions: {})\n",
                list.len(),
                if open > 0 { format!(", {open} BLOCKING unresolved") } else { String::new() },
                if actions.is_empty() { "fix the cause".into() } else { actions.join(", ") }
            ));
            for c in list.iter().take(20) {
                let who = c.node_uuid.clone().unwrap_or_else(|| match &c.subject {
                    crate::core::migrate::conflict::Subject::Host { host } => format!("host {host}"),
                    crate::core::migrate::conflict::Subject::Node { nova_bm_id }
                    | crate::core::migrate::conflict::Subject::Interface { nova_bm_id, .. } => {
                        format!("nova_bm node {nova_bm_id}")
                    }
                    crate::core::migrate::conflict::Subject::Run => "the run".into(),
                });
                let decision = match (c.action, c.decided_by) {
                    (Some(a), Some(by)) => format!("-> {a} ({by})"),
                    _ => "-> UNRESOLVED".into(),
                };
                out.push_str(&format!("    {who}: {} {decision}\n", c.detail));
            }
            if list.len() > 20 {
                out.push_str(&format!("    ... and {} more\n", list.len() - 20));
            }
        }
    }
    for w in &p.warnings {
        out.push_str(&format!("\nwarning: {w}"));
    }
    out.push_str(&format!(
        "\n\nPlan: create {} (active {}, in maintenance {}), skip {}, already migrated {}, blocked {}; {} ports; {} blocking conflict(s) unresolved; checksum {}\n",
        p.summary.create, p.summary.active, p.summary.maintenance, p.summary.skip, p.summary.already_migrated, p.summary.blocked, p.summary.ports, p.summary.blocking, &p.checksum[..12]
    ));
    if p.summary.blocking > 0 {
        out.push_str("Resolve the blocking conflicts (--resolve CODE=ACTION, --resolutions FILE, or the wizard) before `migrate`.\n");
    }
    out
}

fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

pub async fn plan(global: &GlobalArgs, args: PlanArgs) -> Result<(), Failure> {
    let prepared = prepare_from(global, &args).await?;
    let p = &prepared.plan;
    if args.json {
        print(&format!("{}\n", plan_json(p)));
    } else {
        print(&render_plan(p));
    }
    if let Some(db) = &prepared.target_db {
        db.close().await;
    }
    if p.blocking() > 0 {
        return Err(Failure {
            code: exit::CONFLICTS,
            message: format!("{} blocking conflict(s) unresolved: nothing would be written", p.blocking()),
        });
    }
    Ok(())
}

/// Asks the operator to type `word`, or refuses without a terminal (unless `--yes`).
pub(crate) fn confirm(yes: bool, what: &str, word: &str) -> Result<(), Failure> {
    if yes {
        return Ok(());
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Err(Failure::usage(format!("{what}: there is no terminal to confirm on; add --yes to go ahead")));
    }
    eprint!("{what}. Type '{word}' to go on: ");
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| Failure::runtime(format!("cannot read the confirmation: {e}")))?;
    if line.trim() == word {
        Ok(())
    } else {
        Err(Failure::runtime("not confirmed: nothing written"))
    }
}

pub async fn migrate(global: &GlobalArgs, args: MigrateArgs) -> Result<(), Failure> {
    let prepared = prepare_from(global, &args.plan).await?;
    let p = &prepared.plan;
    let json_out = args.plan.json;
    if p.blocking() > 0 {
        if json_out {
            for c in p.conflicts.iter().filter(|c| c.is_unresolved_blocking()) {
                print(&format!(
                    "{}\n",
                    json!({"event": "conflict", "code": c.code, "node_uuid": c.node_uuid, "detail": c.detail})
                ));
            }
            print(&format!(
                "{}\n",
                json!({"event": "summary", "committed": false, "blocking": p.blocking(), "created": 0})
            ));
        } else {
            print(&render_plan(p));
        }
        if let Some(db) = &prepared.target_db {
            db.close().await;
        }
        return Err(Failure {
            code: exit::CONFLICTS,
            message: format!("{} blocking conflict(s) unresolved: nothing written", p.blocking()),
        });
    }
    let target_db = prepared.target_db.clone().ok_or_else(|| Failure::runtime("no Ironic database open"))?;
    let target_desc = target_db.url.redacted().to_string();
    if !args.rehearse {
        confirm(
            args.yes,
            &format!(
                "This writes {} nodes and {} ports into {target_desc} in one transaction",
                p.summary.create, p.summary.ports
            ),
            "migrate",
        )?;
    }
    let run_id = uuid::Uuid::new_v4().to_string();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let cancel_on_ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel_on_ctrl_c.cancel();
        }
    });
    let db = target_db.clone();
    let schema = prepared.target.schema.clone();
    let plan_owned = prepared.plan.clone();
    let source = prepared.source.clone();
    let rehearse = args.rehearse;
    let rid = run_id.clone();
    let task = tokio::spawn(async move {
        let req = LoadRequest { plan: &plan_owned, schema: &schema, rehearse, source, run_id: rid };
        load_sql::load_db(&db, req, &tx, &cancel).await
    });
    let tty = std::io::stderr().is_terminal();
    while let Some(ev) = rx.recv().await {
        if json_out {
            print(&format!("{}\n", serde_json::to_string(&ev).unwrap_or_default()));
            continue;
        }
        match ev {
            LoadEvent::Started { run_id, nodes, ports, rehearse } => {
                eprintln!("{} run {run_id}: {nodes} nodes, {ports} ports", if rehearse { "REHEARSAL" } else { "LIVE" });
            }
            LoadEvent::Progress { done, total } if tty => eprint!("\r  written {done}/{total} nodes"),
            LoadEvent::Node { uuid, status: NodeStatus::Skipped { reason }, nova_bm_id } if global.verbose > 0 => {
                eprintln!("  skip nova_bm {nova_bm_id} {uuid}: {reason}")
            }
            _ => {}
        }
    }
    if tty && !json_out {
        eprintln!();
    }
    let result = task.await.map_err(|e| Failure::runtime(format!("the load task failed: {e}")))?;
    target_db.close().await;
    let s = result.map_err(|e| Failure::runtime(e.to_string()))?;
    if !json_out {
        let mut t = Table::new(&[
            ("read", true),
            ("created", true),
            ("skipped", true),
            ("already", true),
            ("maintenance", true),
            ("ports", true),
            ("errors", true),
            ("time", true),
        ]);
        t.row(vec![
            s.read.to_string(),
            s.created.to_string(),
            s.skipped.to_string(),
            s.already_migrated.to_string(),
            s.maintenance.to_string(),
            s.ports.to_string(),
            s.errors.to_string(),
            format!("{:.2}s", s.elapsed_ms as f64 / 1000.0),
        ]);
        print(&t.render());
        if s.rehearse {
            print(&format!("REHEARSAL run {}: everything was written, then rolled back; nothing stays.\n", s.run_id));
        } else if s.committed {
            print(&format!("Committed run {} (plan checksum {}). Next: `bm2ironic verify --run {}`; undo with `bm2ironic rollback --run {}`.\n", s.run_id, &s.plan_checksum[..12], s.run_id, s.run_id));
        } else {
            print("Nothing to write.\n");
        }
    }
    Ok(())
}

pub async fn verify(global: &GlobalArgs, args: VerifyArgs) -> Result<(), Failure> {
    let settings = global.settings()?;
    let src = settings.nova_bm_db.as_ref().ok_or_else(|| Failure::from(PrepareError::NoSource))?;
    let tgt = settings.ironic_db.as_ref().ok_or_else(|| Failure::from(PrepareError::NoTarget))?;
    let db = target::connect(&tgt.value).await.map_err(|e| Failure::runtime(e.to_string()))?;
    let schema = target::detect(&db, None).await.map_err(|e| Failure::runtime(e.to_string()))?;
    let runs = load_sql::runs(&db).await.map_err(|e| Failure::runtime(e.to_string()))?;
    let run = rollback::pick_run(runs, args.run.as_deref()).map_err(|e| Failure::runtime(e.to_string()))?;
    let source = NovaBmSource::open(&src.value).await?;
    let inv = source.read_inventory(|_| {}).await?;
    source.close().await;
    let token = std::env::var(ENV_IRONIC_TOKEN).ok().filter(|t| !t.is_empty()).map(Secret::new);
    let api = match &settings.ironic_url {
        Some(u) => Some(IronicApi::new(&u.value, token, schema.kind).map_err(|e| Failure::runtime(e.to_string()))?),
        None => None,
    };
    let report = verify::verify(&db, &run, &inv, api.as_ref()).await.map_err(|e| Failure::runtime(e.to_string()))?;
    db.close().await;
    let takeover_failed = match (args.takeover, &api) {
        (false, _) => 0,
        (true, None) => {
            return Err(Failure::usage("--takeover asks the Ironic API: give --ironic-url or BM2IRONIC_IRONIC_URL"))
        }
        (true, Some(api)) => takeover(&args, api, &run)?.await?,
    };
    if args.json {
        for d in &report.differences {
            print(&format!(
                "{}\n",
                json!({"event": "difference", "uuid": d.uuid, "nova_bm_id": d.nova_bm_id, "against": d.against, "field": d.field, "expected": d.expected, "found": d.found})
            ));
        }
        print(&format!(
            "{}\n",
            json!({"event": "summary", "run_id": report.run_id, "nodes": report.nodes_checked, "ports": report.ports_checked, "api": report.api_checked, "differences": report.differences.len()})
        ));
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

/// `verify --takeover`: waits for Ironic to take the run's nodes over; returns the failed count.
fn takeover<'a>(
    args: &'a VerifyArgs,
    api: &'a IronicApi,
    run: &'a crate::core::migrate::load_sql::RunRecord,
) -> Result<impl std::future::Future<Output = Result<usize, Failure>> + 'a, Failure> {
    use crate::core::ironic::takeover::{self, TakeoverState};
    let timeout = super::watch::parse_duration(&args.timeout).map_err(Failure::usage)?;
    Ok(async move {
        let uuids: Vec<String> = run.written.iter().map(|w| w.uuid.clone()).collect();
        let tty = std::io::stderr().is_terminal();
        let mut nodes = takeover::check(api, &uuids, timeout, std::time::Duration::from_secs(2), |n| {
            if tty {
                let ok = n.iter().filter(|x| x.state != TakeoverState::Pending).count();
                eprint!("\r  takeover: {ok}/{} nodes settled", n.len());
            }
        })
        .await;
        if tty {
            eprintln!();
        }
        if !args.logs.is_empty() {
            let migrated = uuids.iter().cloned().collect();
            let since = run.finished_at.or(Some(run.started_at));
            let records = crate::core::logs::watch::scan(
                &args.logs,
                since,
                &crate::core::logs::watch::Patterns::default_set(),
                &migrated,
            )
            .map_err(|e| Failure::runtime(e.to_string()))?;
            takeover::attach_logs(&mut nodes, &records);
        }
        let failed = nodes.iter().filter(|n| n.state == TakeoverState::Failed).count();
        for n in &nodes {
            tracing::info!(uuid = %n.uuid, state = ?n.state, power = ?n.power_state, problems = ?n.problems, "takeover");
        }
        if args.json {
            for n in &nodes {
                print(&format!("{}\n", json!({"event": "takeover", "node": n})));
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
                    serde_json::to_value(n.state).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
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
    })
}

pub async fn rollback_cmd(global: &GlobalArgs, args: RollbackArgs) -> Result<(), Failure> {
    let settings = global.settings()?;
    let tgt = settings.ironic_db.as_ref().ok_or_else(|| Failure::from(PrepareError::NoTarget))?;
    let db = target::connect(&tgt.value).await.map_err(|e| Failure::runtime(e.to_string()))?;
    if args.list {
        let runs = load_sql::runs(&db).await.map_err(|e| Failure::runtime(e.to_string()))?;
        let mut t =
            Table::new(&[("RUN", false), ("STARTED", false), ("STATUS", false), ("NODES", true), ("CHECKSUM", false)]);
        for r in &runs {
            t.row(vec![
                r.id.clone(),
                r.started_at.to_string(),
                r.status.clone(),
                r.written.len().to_string(),
                r.plan_checksum.chars().take(12).collect(),
            ]);
        }
        print(&t.render());
        return Ok(());
    }
    confirm(
        args.yes,
        &format!(
            "This removes from {} the nodes and ports that run {} wrote",
            tgt.value.redacted(),
            args.run.as_deref().unwrap_or("(newest)")
        ),
        "rollback",
    )?;
    let r = rollback::rollback(&db, args.run.as_deref(), args.force).await;
    db.close().await;
    let r = r.map_err(|e| match e {
        RollbackError::Db(d) => Failure::runtime(d.to_string()),
        other => Failure::runtime(other.to_string()),
    })?;
    if args.json {
        print(&format!(
            "{}\n",
            json!({"event": "summary", "run_id": r.run_id, "removed_nodes": r.removed_nodes, "removed_ports": r.removed_ports, "already_gone": r.already_gone, "forced": r.changed_but_forced, "not_restored": r.not_restored})
        ));
    } else {
        print(&format!(
            "Rolled back run {}: removed {} nodes and {} ports ({} already gone).\n",
            r.run_id, r.removed_nodes, r.removed_ports, r.already_gone
        ));
        for c in &r.changed_but_forced {
            print(&format!("  forced over a change: {c}\n"));
        }
        for n in &r.not_restored {
            print(&format!("  NOT restored (deleted by `replace`): {n}\n"));
        }
    }
    // the flavors changed for the upgrade go back too, when the Nova DB is given
    if let Some(nova) = &settings.nova_db {
        let ndb = crate::core::db::Db::connect(&nova.value, crate::core::db::Access::ReadWrite)
            .await
            .map_err(|e| Failure::runtime(e.to_string()))?;
        let restored = match crate::core::migrate::flavors::detect(&ndb).await {
            Ok(schema) => crate::core::migrate::flavors::restore(&ndb, schema, None).await,
            Err(e) => Err(e),
        };
        ndb.close().await;
        match restored {
            Ok((set, n)) => print(&format!("Restored {n} flavor spec(s) of change set {set}.\n")),
            Err(crate::core::migrate::flavors::FlavorError::NothingToRestore) => print("No flavor change to restore.\n"),
            Err(e) => return Err(Failure::runtime(format!("Ironic was rolled back, but the flavors were not restored: {e} (retry with `bm2ironic flavors --restore`)"))),
        }
    }
    Ok(())
}
