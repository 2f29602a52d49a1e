//! Everything before a load, in order: open nova_bm (read only) and read the inventory, open the
//! Ironic database and detect its schema, read Nova's facts when given, the TFTP trees' PXE
//! configs and (`--check-bmc`) every BMC, and compute the plan.
//! Shared by `plan`, `migrate` and the wizard.

use std::sync::Arc;
use std::time::Instant;

use crate::core::bmc::{self, BmcFacts};
use crate::core::db::url::DbUrl;
use crate::core::db::{Db, DbError};
use crate::core::ironic::target::{self, TargetError, TargetState};
use crate::core::migrate::conflict::Resolutions;
use crate::core::migrate::plan::{self, Plan, PlanOptions};
use crate::core::migrate::timing::{ms, Phases};
use crate::core::settings::ConnectionSettings;
use crate::core::source::model::Inventory;
use crate::core::source::nova::{self, NovaError, NovaFacts};
use crate::core::source::nova_bm::{NovaBmSource, SourceError};
use crate::core::source::tftp;
use crate::core::AbortOnDrop;

#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("no nova_bm database given: use --nova-bm-db URL, BM2IRONIC_NOVA_BM_DB, or --nova-conf with [baremetal] sql_connection")]
    NoSource,
    #[error("no Ironic database given: use --ironic-db URL, BM2IRONIC_IRONIC_DB, or --ironic-conf with [database] connection")]
    NoTarget,
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Nova(#[from] NovaError),
    /// the BMC check could not run at all (no ipmitool)
    #[error("{0}")]
    Bmc(String),
}

impl crate::core::kind::HasKind for PrepareError {
    /// No source or no target given is the operator's to fix, as is a bad `--object-version`; the
    /// databases' own failures are not.
    fn kind(&self) -> crate::core::kind::Kind {
        use crate::core::kind::Kind;
        match self {
            PrepareError::NoSource | PrepareError::NoTarget => Kind::Usage,
            PrepareError::Target(e) => e.kind(),
            PrepareError::Source(_) | PrepareError::Nova(_) | PrepareError::Bmc(_) => Kind::Runtime,
        }
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Prepared {{ nodes: {}, plan: {} }}", self.inventory.nodes.len(), self.plan.checksum)
    }
}

pub struct Prepared {
    /// shared with the plan, which builds rows from it
    pub inventory: Arc<Inventory>,
    /// what the target held when it was read (the database, or the API's view); no connection to
    /// it is kept here: whoever opened the target closes it (`steps::LoadPath`)
    pub target: TargetState,
    pub nova: Option<NovaFacts>,
    pub plan: Plan,
    /// redacted nova_bm URL
    pub source: String,
    /// how long reading and planning took
    pub timings: Phases,
    /// what the TFTP trees said of each instance's boot (read once: a replan reuses it)
    pub boots: Arc<tftp::BootFacts>,
    /// what the BMC check read (`--check-bmc`, the wizard's `b`; read once: a replan reuses it)
    pub bmc: Arc<BmcFacts>,
}

/// Read-only browse: nova_bm only, planned against an empty modern Ironic so source-side conflicts show.
pub async fn browse(
    settings: &ConnectionSettings,
    options: &PlanOptions,
    resolutions: &Resolutions,
) -> Result<Prepared, PrepareError> {
    let src_url = &settings.nova_bm_db.as_ref().ok_or(PrepareError::NoSource)?.value;
    let started = Instant::now();
    let inventory = read_inventory(src_url).await?;
    let read = ms(started.elapsed());
    let planning = Instant::now();
    let (target, options, plan) = browse_plan(&inventory, options, resolutions);
    let timings = Phases { read_ms: Some(read), plan_ms: Some(ms(planning.elapsed())), ..Default::default() };
    Ok(Prepared {
        inventory,
        target,
        nova: None,
        plan,
        source: src_url.redacted().to_string(),
        timings,
        boots: options.boots,
        bmc: options.bmc,
    })
}

/// The read-only browse's plan of `inventory` (the terminal's and the piped table's): against an
/// empty modern Ironic, target-side choices left out (any arch and deploy images: only what nova_bm
/// holds is marked), the boots read from the TFTP trees given. (target, options used, plan)
pub fn browse_plan(
    inventory: &Arc<Inventory>,
    options: &PlanOptions,
    resolutions: &Resolutions,
) -> (TargetState, PlanOptions, Plan) {
    let target =
        TargetState { schema: target::TargetSchema::known(target::TargetKind::Modern), nodes: vec![], ports: vec![] };
    let mut options = options.clone();
    options.default_arch.get_or_insert_with(|| "(any)".into());
    options.deploy_kernel.get_or_insert_with(|| "(any)".into());
    options.deploy_ramdisk.get_or_insert_with(|| "(any)".into());
    options.boots = Arc::new(tftp::learn(inventory, &options.tftp_roots));
    let plan = plan::plan(inventory, &target, None, &options, resolutions);
    (target, options, plan)
}

/// The plan against the Ironic database `target_db` (opened by the caller, who closes it).
pub async fn prepare(
    settings: &ConnectionSettings,
    target_db: &Db,
    options: &PlanOptions,
    resolutions: &Resolutions,
    object_version: Option<&(String, String)>,
) -> Result<Prepared, PrepareError> {
    let src_url = &settings.nova_bm_db.as_ref().ok_or(PrepareError::NoSource)?.value;
    let started = Instant::now();
    // nova_bm read while the target is detected and read (the first error of either stops both)
    let source = read_inventory(src_url);
    // a task of its own: polled beside the source read, it waited until the nodes stream paused
    let mut opening = AbortOnDrop(tokio::spawn({
        let (db, object_version) = (target_db.clone(), object_version.cloned());
        async move {
            let schema = target::detect(&db, object_version.as_ref()).await?;
            let mut state = target::read_state(&db, schema).await?;
            // which runs this database records as finished: a node of any other run is not
            // `already-migrated` (docs/runs.md)
            let mut tx = db.begin().await?;
            let heads = crate::core::migrate::run::record::heads(&mut tx).await;
            let _ = tx.rollback().await;
            state.mark_runs(&crate::core::migrate::run::store::finished_ids(&heads?));
            Ok::<_, TargetError>(state)
        }
    }));
    let target = async {
        match opening.join().await {
            Ok(read) => Ok(read?),
            Err(e) => Err(PrepareError::Target(TargetError::Db(DbError::Other {
                what: target_db.url.describe(),
                message: format!("reading the Ironic database stopped: {e}"),
            }))),
        }
    };
    let (inventory, target) = tokio::try_join!(source, target)?;

    let nova = read_nova(settings, &inventory).await?;
    let against = "the Ironic database";
    let read = Read { inventory, nova, target, src_url, started, against };
    finish(read, options, resolutions).await
}

/// nova_bm's inventory, read read-only in one pass.
pub(crate) async fn read_inventory(src_url: &DbUrl) -> Result<Arc<Inventory>, PrepareError> {
    let source = NovaBmSource::open(src_url).await?;
    let inventory = source.read_inventory(|_| {}).await;
    source.close().await;
    Ok(Arc::new(inventory?))
}

/// Nova's facts about the inventory's instances, when the Nova database is given.
pub(crate) async fn read_nova(
    settings: &ConnectionSettings,
    inventory: &Inventory,
) -> Result<Option<NovaFacts>, PrepareError> {
    let Some(u) = &settings.nova_db else { return Ok(None) };
    let uuids: Vec<String> = inventory.nodes.iter().filter_map(|n| n.node.instance_uuid.clone()).collect();
    let mut facts = nova::read_facts(&u.value, &uuids).await?;
    if let Some(c) = &settings.nova_conf {
        facts.heartbeats = c.heartbeats.clone();
    }
    Ok(Some(facts))
}

/// What a prepare read, from either target, before it plans.
pub(crate) struct Read<'a> {
    pub inventory: Arc<Inventory>,
    pub nova: Option<NovaFacts>,
    pub target: TargetState,
    pub src_url: &'a DbUrl,
    /// when the reading began
    pub started: Instant,
    /// the target's view, for the log ("the Ironic database", "the Ironic API at ...")
    pub against: &'a str,
}

/// The end of every prepare, either target: the plan, its conflicts in the audit log, and how
/// long reading (since `started`) and planning took.
pub(crate) async fn finish(
    read: Read<'_>,
    options: &PlanOptions,
    resolutions: &Resolutions,
) -> Result<Prepared, PrepareError> {
    let Read { inventory, nova, target, src_url, started, against } = read;
    // the TFTP trees' PXE configs and the BMCs, read here: the plan itself does no I/O
    let mut options = options.clone();
    options.boots = Arc::new(tftp::learn(&inventory, &options.tftp_roots));
    if let Some(check) = &options.check_bmc {
        options.bmc = Arc::new(bmc::check(&inventory, check, &*check.progress).await.map_err(PrepareError::Bmc)?);
    }
    let read = ms(started.elapsed());
    let planning = Instant::now();
    let plan = plan::plan(&inventory, &target, nova.as_ref(), &options, resolutions);
    let timings = Phases { read_ms: Some(read), plan_ms: Some(ms(planning.elapsed())), ..Default::default() };
    tracing::info!(
        create = plan.summary.create,
        skip = plan.summary.skip,
        blocking = plan.summary.blocking,
        checksum = %plan.checksum,
        against,
        "plan computed"
    );
    for c in &plan.conflicts {
        tracing::info!(code = %c.code, subject = ?c.subject, action = ?c.action, decided_by = ?c.decided_by, "conflict: {}", c.detail);
    }
    let (boots, bmc) = (options.boots, options.bmc);
    Ok(Prepared { inventory, target, nova, plan, source: src_url.redacted().to_string(), timings, boots, bmc })
}
