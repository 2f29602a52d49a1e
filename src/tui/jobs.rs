//! The wizard's background work, one async function per job: each takes plain values (no `App`),
//! calls the core, and ends in the message that reports it. The runtime (`runtime.rs`) only spawns them
//! and forwards what they return; `update` turns the messages into state.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio_util::sync::CancellationToken;

use super::error::JobError;
use super::field::{Field, FieldKind};
use super::msg::Msg;
use super::work::{Finished, FlavorView};
use crate::core::db::url::DbUrl;
use crate::core::db::{Access, Db};
use crate::core::ironic::api::{self as ironic_api, ApiError, ApiTarget};
use crate::core::ironic::target::TargetKind;
use crate::core::logs::watch::WatchedLog;
use crate::core::migrate::conflict::Resolutions;
use crate::core::migrate::flavors::{FlavorTarget, SpecChange};
use crate::core::migrate::load_api::ApiLoadOptions;
use crate::core::migrate::plan::PlanOptions;
use crate::core::migrate::prepare::{self, Prepared};
use crate::core::migrate::steps;
use crate::core::migrate::steps::{MigrateFace, MigrateRequest, Mode, PlanRequest, Planned, StepError};
use crate::core::settings::{self, ConnectionFlags, ConnectionSettings};

/// The connection values of the form, as typed (empty: not given).
#[derive(Debug, Clone, Default)]
pub struct Connections {
    pub nova_bm_db: String,
    pub ironic_db: String,
    pub nova_db: String,
    pub nova_api_db: String,
    pub ironic_api: String,
    /// `--state-dir` (where API runs are kept without an Ironic database); None: the default
    pub state_dir: Option<PathBuf>,
}

impl Connections {
    /// The form's values (what the flags, the environment and the config files prefilled, as
    /// edited), resolved as every face's are: the same URL checks, the same origins. An empty field
    /// is not given; an Ironic API value without `://` is a cloud name (see [`api_target`]).
    pub fn settings(&self) -> Result<ConnectionSettings, JobError> {
        let given = |v: &str| (!v.trim().is_empty()).then(|| v.to_string());
        let api = self.ironic_api.trim();
        let flags = ConnectionFlags {
            nova_bm_db: given(&self.nova_bm_db),
            ironic_db: given(&self.ironic_db),
            nova_db: given(&self.nova_db),
            nova_api_db: given(&self.nova_api_db),
            ironic_url: api.contains("://").then(|| api.to_string()),
            // the TFTP trees come with the plan options (the command line's `--tftp-root`)
            ..Default::default()
        };
        // the environment was read into the form already: not again
        Ok(ConnectionSettings::resolve(&flags, &|_| None)?)
    }
}

/// A connection test (the screen opened, a field was edited, or ^T): the Ironic API's version, or
/// the database server's, and how long it took. `generation` names the value tested.
pub async fn test_connection(field: Field, generation: u64, kind: FieldKind, value: String) -> Msg {
    let result = if kind == FieldKind::Http { test_api(&value).await } else { test_db(&value).await };
    Msg::Tested { field, generation, result }
}

/// The process environment, as the core's resolvers take it.
fn env(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

/// The Ironic API field, resolved by the core as for every face: a URL (noauth, or
/// `BM2IRONIC_IRONIC_TOKEN`), or a cloud of clouds.yaml (Keystone; the endpoint from the catalog).
fn api_target(value: &str) -> Result<ApiTarget, JobError> {
    Ok(settings::api_target_of_field(value, &env)?)
}

impl Connections {
    /// Where API runs are kept when the wizard has no Ironic database: `--state-dir`, else the
    /// CLI's default, resolved as for every face.
    fn state_dir(&self) -> PathBuf {
        settings::state_dir(self.state_dir.clone(), &env)
    }
}

async fn test_api(value: &str) -> Result<String, JobError> {
    let started = Instant::now();
    let api = ironic_api::open(&api_target(value)?, TargetKind::Modern)
        .await?
        .ok_or_else(|| JobError::Api(ApiError::Unreachable { url: value.into(), reason: "nothing given".into() }))?;
    let version = api.version().map(|(a, b)| format!("{a}.{b}")).unwrap_or_else(|| "?".into());
    let via = match api.scope().await {
        Some(scope) => format!(" at {} (Keystone, {})", api.base(), scope.describe()),
        None => String::new(),
    };
    Ok(format!("Ironic API {version}{via} in {} ms", started.elapsed().as_millis()))
}

async fn test_db(url: &str) -> Result<String, JobError> {
    let db = Db::connect_with(&DbUrl::parse(url)?, Access::ReadOnly, 1).await?;
    Ok(crate::core::using(db, async |db| format!("{} in {} ms", db.server_version, db.latency.as_millis())).await)
}

/// Where the wizard loads: through the API when the operator chose it (or when no Ironic database
/// is given), else the Ironic database in one transaction.
fn mode(settings: &ConnectionSettings, api: bool, rehearse: bool) -> Mode {
    if api || settings.ironic_db.is_none() {
        Mode::Api(ApiLoadOptions::default())
    } else {
        Mode::Db { rehearse }
    }
}

/// Reads nova_bm (and the target unless read-only) and plans: against the Ironic database, or,
/// without one, against the Ironic API's view (as `plan --via api`).
pub async fn prepare(
    connections: Connections,
    opts: PlanOptions,
    res: Resolutions,
    read_only: bool,
    via_api: bool,
    tx: UnboundedSender<Msg>,
) -> Msg {
    // the BMC check is `b` on Inventory, with its progress on the screen (not inside this prepare)
    let opts = PlanOptions { check_bmc: None, ..opts };
    let r = async {
        let settings = connections.settings()?;
        if read_only {
            return Ok(Arc::new(prepare::browse(&settings, &opts, &res).await?));
        }
        let req = PlanRequest {
            settings: &settings,
            options: &opts,
            resolutions: &res,
            resolutions_file: None,
            object_version: None,
        };
        let api = api_target(&connections.ironic_api)?;
        let warn = &mut |w: &str| {
            let _ = tx.send(Msg::Warning(w.to_string()));
        };
        let planned = steps::plan(&req, &mode(&settings, via_api, false), &api, connections.state_dir(), warn).await?;
        Ok(planned.prepared)
    }
    .await;
    Msg::Prepared(r)
}

/// `b` on Inventory: every live node's BMC of `inventory` read once (read only), its progress sent
/// as `Msg::BmcProgress`; `check` from `--bmc-concurrency` / `--bmc-timeout` (or the defaults).
pub async fn check_bmc(
    inventory: Arc<crate::core::source::model::Inventory>,
    check: crate::core::bmc::CheckOptions,
    tx: UnboundedSender<Msg>,
) -> Msg {
    let progress = move |p: crate::core::bmc::Progress| {
        let _ = tx.send(Msg::BmcProgress { done: p.done, total: p.total });
    };
    let facts = crate::core::bmc::check(&inventory, &check, &progress).await;
    Msg::BmcChecked(facts.map(Arc::new))
}

/// The wizard's part of the migrate use case: the operator confirmed on the confirm screen.
struct Confirmed<'a>(&'a UnboundedSender<Msg>);

impl MigrateFace for Confirmed<'_> {
    fn confirm(&mut self, _: &Planned, _: &str) -> Result<(), StepError> {
        Ok(())
    }
    fn note(&mut self, text: &str) {
        let _ = self.0.send(Msg::Warning(text.to_string()));
    }
}

/// What to load: the plan the operator reviewed (its options and decisions, and its checksum: a
/// plan made again that differs is not loaded), and how.
pub struct LoadOrder {
    pub opts: PlanOptions,
    pub resolutions: Resolutions,
    /// the plan reviewed, loaded as it is into the Ironic database (through the API the plan is made
    /// again: the API's view of Ironic is read again, an unfinished run's nodes left out of it)
    pub reviewed: Option<Planned>,
    pub rehearse: bool,
    pub via_api: bool,
}

/// The load, through the migrate use case as `bm2ironic migrate` runs it: the target opened, the
/// plan made again and checked against the one reviewed, loaded (into the Ironic database in one
/// transaction, or through the API node by node), the run verified before the target closes.
/// Progress goes to `tx` as `Msg::Load` while it runs; the returned message is the outcome the core
/// decided. With `simulate` (the demo), a takeover is then written into those logs.
pub async fn load(
    connections: Connections,
    order: LoadOrder,
    cancel: CancellationToken,
    tx: UnboundedSender<Msg>,
    simulate: Option<Vec<(String, PathBuf)>>,
) -> Msg {
    let r = async {
        let settings = connections.settings()?;
        let plan = PlanRequest {
            settings: &settings,
            options: &order.opts,
            resolutions: &order.resolutions,
            resolutions_file: None,
            object_version: None,
        };
        let req = MigrateRequest {
            plan,
            mode: mode(&settings, order.via_api, order.rehearse),
            api: api_target(&connections.ironic_api)?,
            state_dir: connections.state_dir(),
            verify: true,
            reviewed: order.reviewed,
        };
        let (etx, mut erx) = unbounded_channel();
        let fwd = tokio::spawn({
            let tx = tx.clone();
            async move {
                while let Some(ev) = erx.recv().await {
                    if tx.send(Msg::Load(ev)).is_err() {
                        return;
                    }
                }
            }
        });
        let m = steps::migrate(req, &mut Confirmed(&tx), etx, &cancel).await;
        let _ = fwd.await;
        let (planned, outcome) = m?;
        if let (Some(logs), true) = (&simulate, outcome.complete() || outcome.rehearsal()) {
            super::demo::simulate_takeover(planned.plan(), logs);
        }
        Ok(Arc::new(Finished { planned, outcome }))
    }
    .await;
    Msg::LoadDone(r)
}

/// Writes the operator's decisions where they can be replayed (`migrate --resolutions FILE`); the
/// journal of unsaved decisions goes once they are saved.
/// The plan made again after a decision (pure, CPU-bound: run on a blocking thread).
pub fn replan(generation: u64, prepared: &Prepared, opts: &PlanOptions, res: &Resolutions) -> Msg {
    let started = Instant::now();
    let plan = super::session::plan_for(prepared, opts, res);
    Msg::Replanned { generation, plan: Ok(Box::new(plan)), ms: crate::core::migrate::timing::ms(started.elapsed()) }
}

pub fn save_resolutions(path: String, text: String, journal: String) -> Msg {
    // said and named in the next steps by its whole path (they are pasted elsewhere)
    let whole = |p: &str| std::fs::canonicalize(p).map_or_else(|_| p.to_string(), |w| w.display().to_string());
    let saved = std::fs::write(&path, text).map(|_| whole(&path)).map_err(|source| JobError::Save { path, source });
    if saved.is_ok() {
        let _ = std::fs::remove_file(journal);
    }
    Msg::Saved(saved)
}

/// Writes the run report (Markdown) for the change ticket.
pub fn write_report(path: String, report: crate::core::migrate::report::Report) -> Msg {
    let r = crate::core::migrate::report::write(&report, std::path::Path::new(&path));
    Msg::ReportWritten(r.map(|_| path.clone()).map_err(|source| JobError::Save { path, source }))
}

/// The flavor change the database holding the flavors (nova_api, or nova for Juno/Kilo) needs for
/// `target` (None: no resource class given for modern Nova).
pub async fn plan_flavors(flavors_db: String, api: bool, target: Option<FlavorTarget>) -> Msg {
    let r = async {
        let url = DbUrl::parse(&flavors_db)?;
        let preview = steps::preview_flavors(&url, target.as_ref(), &[]).await?;
        let schema = format!("{:?}", preview.schema);
        let source = format!("{} database: {}", if api { "Nova API" } else { "Nova" }, url.redacted());
        Ok(match (target, preview.changes) {
            (Some(t), Some(changes)) => {
                FlavorView { schema, source, what: steps::describe_flavor_target(&t), changes, applied: None }
            }
            _ => FlavorView {
                source,
                what: "no resource class given: modern Nova flavors need one (field Resource class)".into(),
                ..Default::default()
            },
        })
    }
    .await;
    Msg::Flavors(r)
}

/// Applies the planned flavor change to the Nova DB in one transaction, as a new change set.
pub async fn apply_flavors(flavors_db: String, changes: Vec<SpecChange>) -> Msg {
    let r = async { Ok(steps::apply_flavors(&DbUrl::parse(&flavors_db)?, &changes).await?) }.await;
    Msg::FlavorsApplied(r)
}

/// How long the wizard's takeover check waits at most.
pub const TAKEOVER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// After a clean verify: follows Ironic's takeover of run `run_id` (of either path; the followed
/// `logs` too); its events go to `tx` as `Msg::Takeover`, the returned message is the end. Stops
/// on `cancel`.
pub async fn takeover(
    connections: Connections,
    run_id: String,
    logs: Vec<WatchedLog>,
    tx: UnboundedSender<Msg>,
    cancel: CancellationToken,
) -> Msg {
    let r = async {
        let settings = connections.settings()?;
        let target = api_target(&connections.ironic_api)?;
        let (etx, mut erx) = unbounded_channel();
        let fwd = tokio::spawn(async move {
            while let Some(ev) = erx.recv().await {
                if tx.send(Msg::Takeover(ev)).is_err() {
                    return;
                }
            }
        });
        let follow = steps::Follow { timeout: TAKEOVER_TIMEOUT, logs: &logs };
        let r =
            steps::check_takeover_of(&settings, connections.state_dir(), &run_id, &target, follow, &etx, &cancel).await;
        drop(etx);
        let _ = fwd.await;
        Ok(r?)
    }
    .await;
    Msg::TakeoverDone(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The form resolves through `settings::resolve`, with its checks: an Ironic API "URL" that is not
    /// http(s) is refused as on the command line (it went through as a URL before), a cloud name is
    /// left to Keystone, a blank field is not given, a malformed database URL is named.
    #[test]
    fn the_form_is_resolved_as_the_command_line_is() {
        let form = |api: &str, bm: &str| Connections {
            nova_bm_db: bm.into(),
            ironic_api: api.into(),
            nova_db: "  ".into(),
            ..Default::default()
        };
        let e = form("ftp://ironic:6385", "sqlite:///tmp/x.sqlite").settings().unwrap_err().to_string();
        assert!(e.contains("not an http(s) URL"), "{e}");
        let s = form("mycloud", "sqlite:///tmp/x.sqlite").settings().unwrap();
        assert!(s.ironic_url.is_none() && s.nova_db.is_none() && s.nova_bm_db.is_some());
        let s = form(" http://ironic:6385 ", "").settings().unwrap();
        assert_eq!(s.ironic_url.map(|u| u.value).as_deref(), Some("http://ironic:6385"));
        let e = form("", "mysql://u:secret@h:99999/db").settings().unwrap_err().to_string();
        assert!(!e.contains("secret"), "{e}");
    }
}
