//! The flavors step: preview, apply and restore the Nova flavor change a target needs (the rules
//! are in `migrate/flavors.rs`; this opens and closes the databases around them).

use crate::core::db::url::DbUrl;
use crate::core::db::{Access, Db};
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::flavors::{self, FlavorError, FlavorSchema, FlavorTarget, SpecChange};

/// Opens the Nova database (`nova` for Juno flavors, `nova_api` for modern ones) and finds its
/// flavor tables. The caller closes the `Db`.
pub async fn open_flavors(url: &DbUrl, access: Access) -> Result<(Db, FlavorSchema), FlavorError> {
    let db = Db::connect(url, access).await?;
    match flavors::detect(&db).await {
        Ok(schema) => Ok((db, schema)),
        Err(e) => {
            db.close().await;
            Err(e)
        }
    }
}

/// What the flavors need for a target of `kind`, from the wizard's fields: Juno/Kilo Nova copies the
/// deploy images from the flavor; modern Nova schedules by resource class (None when none is given).
pub fn flavor_target_for(kind: TargetKind, kernel: &str, ramdisk: &str, resource_class: &str) -> Option<FlavorTarget> {
    match kind {
        TargetKind::Juno => {
            Some(FlavorTarget::DeployImages { kernel: kernel.to_string(), ramdisk: ramdisk.to_string() })
        }
        TargetKind::Modern => {
            Some(resource_class.to_string()).filter(|c| !c.is_empty()).map(FlavorTarget::ResourceClass)
        }
    }
}

/// One sentence on why the flavors change, for the operator.
pub fn describe_flavor_target(t: &FlavorTarget) -> String {
    match t {
        FlavorTarget::DeployImages { .. } => {
            "Juno/Kilo Nova copies the deploy images from the flavor: point them at Ironic's".to_string()
        }
        FlavorTarget::ResourceClass(c) => {
            format!("modern Nova schedules bare metal by resource class {}", flavors::custom_class(c))
        }
    }
}

/// The flavor tables found and the changes a target needs.
#[derive(Debug, Clone)]
pub struct FlavorPreview {
    pub schema: FlavorSchema,
    /// None when no target was given (the tables were checked, there is nothing to plan against)
    pub changes: Option<Vec<SpecChange>>,
}

/// Reads (read-only) the flavor changes `target` needs, for the flavors named in `only` (empty:
/// every flavor with a baremetal: key). Connects, finds the tables, plans, closes.
pub async fn preview_flavors(
    url: &DbUrl,
    target: Option<&FlavorTarget>,
    only: &[String],
) -> Result<FlavorPreview, FlavorError> {
    let (db, schema) = open_flavors(url, Access::ReadOnly).await?;
    let changes = match target {
        Some(t) => flavors::plan_changes(&db, schema, t, only).await.map(Some),
        None => Ok(None),
    };
    db.close().await;
    Ok(FlavorPreview { schema, changes: changes? })
}

/// Applies `changes` on an open Nova database in one transaction, recorded as a new change set;
/// returns the change set id (`flavors --restore --change-set ID` undoes it).
pub async fn apply_flavor_changes(
    db: &Db,
    schema: FlavorSchema,
    changes: &[SpecChange],
) -> Result<String, FlavorError> {
    let set = uuid::Uuid::new_v4().to_string();
    flavors::apply(db, schema, changes, &set).await?;
    Ok(set)
}

/// [`apply_flavor_changes`] on its own connection (read-write): connects, finds the tables, applies,
/// closes; returns the change set id.
pub async fn apply_flavors(url: &DbUrl, changes: &[SpecChange]) -> Result<String, FlavorError> {
    let (db, schema) = open_flavors(url, Access::ReadWrite).await?;
    let r = apply_flavor_changes(&db, schema, changes).await;
    db.close().await;
    r
}

/// Puts back, on an open Nova database, the recorded values of change set `change_set` (None: the
/// newest); returns the change set id and how many specs were restored.
/// `FlavorError::NothingToRestore` when no change is recorded.
pub async fn restore_flavor_changes(db: &Db, change_set: Option<&str>) -> Result<(String, usize), FlavorError> {
    let schema = flavors::detect(db).await?;
    flavors::restore(db, schema, change_set).await
}

/// [`restore_flavor_changes`] on its own connection (read-write): connects, restores, closes.
pub async fn restore_flavors(url: &DbUrl, change_set: Option<&str>) -> Result<(String, usize), FlavorError> {
    let db = Db::connect(url, Access::ReadWrite).await?;
    let r = restore_flavor_changes(&db, change_set).await;
    db.close().await;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavor_targets_by_kind() {
        assert!(matches!(
            flavor_target_for(TargetKind::Juno, "k", "r", ""),
            Some(FlavorTarget::DeployImages { kernel, ramdisk }) if kernel == "k" && ramdisk == "r"
        ));
        assert!(flavor_target_for(TargetKind::Modern, "k", "r", "").is_none());
        let t = flavor_target_for(TargetKind::Modern, "", "", "baremetal-gold").unwrap();
        assert!(describe_flavor_target(&t).starts_with("modern Nova schedules bare metal by resource class CUSTOM_"));
    }
}
