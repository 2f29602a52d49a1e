//! Everything before an API load: the inventory from nova_bm, the target's nodes and ports read
//! through the API, the run to resume, Nova's facts, and the same plan as the SQL path. The nodes
//! of the unfinished run being resumed are left out of the target state, so the plan holds their
//! rows again and the loader continues each one from where it stands.

use crate::core::db::conf::ConnectionSettings;
use crate::core::ironic::api::nodes::{self, StateIds};
use crate::core::ironic::api::IronicApi;
use crate::core::migrate::conflict::Resolutions;
use crate::core::migrate::load_sql::RunRecord;
use crate::core::migrate::plan::{self, PlanOptions};
use crate::core::migrate::prepare::{PrepareError, Prepared};
use crate::core::source::nova;
use crate::core::source::nova_bm::NovaBmSource;
use std::sync::Arc;

use super::record::RunStore;
use super::ApiLoadError;

/// The prepared plan, the stand-in ids of the API's nodes, and the run a load would resume.
pub struct PreparedApi {
    pub prepared: Prepared,
    pub ids: StateIds,
    pub resume: Option<RunRecord>,
}

pub async fn prepare_api(
    settings: &ConnectionSettings,
    options: &PlanOptions,
    resolutions: &Resolutions,
    api: &IronicApi,
    store: &RunStore,
) -> Result<PreparedApi, ApiLoadError> {
    let src_url = &settings.nova_bm_db.as_ref().ok_or(PrepareError::NoSource)?.value;
    let source = NovaBmSource::open(src_url).await.map_err(PrepareError::from)?;
    let inventory = source.read_inventory(|_| {}).await;
    source.close().await;
    let inventory = Arc::new(inventory.map_err(PrepareError::from)?);

    let (mut target, ids) = nodes::read_state(api).await?;
    let resume = store.resumable().await?;
    if let Some(r) = &resume {
        let resumed: Vec<i64> =
            target.nodes.iter().filter(|n| n.migrated_by_run() == Some(r.id.as_str())).map(|n| n.id).collect();
        target.nodes.retain(|n| !resumed.contains(&n.id));
        target.ports.retain(|p| p.node_id.is_none_or(|id| !resumed.contains(&id)));
        tracing::info!(run = %r.id, nodes = resumed.len(), "resuming an unfinished API run");
    }
    let nova = match &settings.nova_db {
        Some(u) => {
            let uuids: Vec<String> = inventory.nodes.iter().filter_map(|n| n.node.instance_uuid.clone()).collect();
            Some(nova::read_facts(&u.value, &uuids).await.map_err(PrepareError::from)?)
        }
        None => None,
    };
    let plan = plan::plan(&inventory, &target, nova.as_ref(), options, resolutions);
    tracing::info!(create = plan.summary.create, skip = plan.summary.skip, blocking = plan.summary.blocking, checksum = %plan.checksum, endpoint = %api.base(), "plan computed against the Ironic API");
    for c in &plan.conflicts {
        tracing::info!(code = %c.code, subject = ?c.subject, action = ?c.action, decided_by = ?c.decided_by, "conflict: {}", c.detail);
    }
    let prepared = Prepared {
        inventory,
        target_db: None,
        target,
        nova,
        plan,
        source: src_url.redacted().to_string(),
        timings: Default::default(),
    };
    Ok(PreparedApi { prepared, ids, resume })
}
