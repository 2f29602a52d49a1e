//! Everything before an API load: the inventory from nova_bm, the target's nodes and ports read
//! through the API, the run to resume, Nova's facts, and the same plan as the SQL path. The nodes
//! of the unfinished run being resumed are left out of the target state, so the plan holds their
//! rows again and the loader continues each one from where it stands.

use crate::core::ironic::api::nodes::{self, StateIds};
use crate::core::ironic::api::IronicApi;
use crate::core::migrate::conflict::Resolutions;
use crate::core::migrate::plan::PlanOptions;
use crate::core::migrate::prepare::{self, PrepareError, Prepared};
use crate::core::migrate::run::record::RunRecord;
use crate::core::settings::ConnectionSettings;
use std::time::Instant;

use super::error::ApiLoadError;
use crate::core::migrate::run::RunStore;

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
    let started = Instant::now();
    // nova_bm read while the API is asked for the target's nodes and ports (the first error stops both)
    let (inventory, (mut target, ids)) =
        tokio::try_join!(async { Ok::<_, ApiLoadError>(prepare::read_inventory(src_url).await?) }, async {
            Ok::<_, ApiLoadError>(nodes::read_state(api).await?)
        },)?;
    let resume = store.resumable().await?;
    if let Some(r) = &resume {
        let resumed: Vec<i64> =
            target.nodes.iter().filter(|n| n.migrated_by_run() == Some(r.id.as_str())).map(|n| n.id).collect();
        target.nodes.retain(|n| !resumed.contains(&n.id));
        target.ports.retain(|p| p.node_id.is_none_or(|id| !resumed.contains(&id)));
        tracing::info!(run = %r.id, nodes = resumed.len(), "resuming an unfinished API run");
    }
    let nova = prepare::read_nova(settings, &inventory).await?;
    let against = format!("the Ironic API at {}", api.base());
    let read = prepare::Read { inventory, nova, target, src_url, started, against: &against };
    let prepared = prepare::finish(read, options, resolutions);
    Ok(PreparedApi { prepared, ids, resume })
}
