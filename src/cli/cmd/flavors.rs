//! `bm2ironic flavors`: shows, and with `--apply` makes, the flavor metadata changes of the upgrade;
//! `--restore` puts the recorded old values back.

use clap::Args;
use serde_json::json;

use crate::cli::args::GlobalArgs;
use crate::cli::failure::Failure;
use crate::cli::output::{confirm, print, print_json, Table};
use crate::core::db::Access;
use crate::core::migrate::flavors::{self, FlavorSchema, FlavorTarget};
use crate::core::migrate::steps;
use crate::core::settings::project::ProjectOptions;
use crate::core::using;

#[derive(Args, Debug, Default)]
pub struct FlavorsArgs {
    /// Juno/Kilo target: the Ironic deploy kernel for baremetal:deploy_kernel_id
    #[arg(long, value_name = "REF", requires = "deploy_ramdisk", conflicts_with = "resource_class")]
    pub deploy_kernel: Option<String>,
    /// Juno/Kilo target: the Ironic deploy ramdisk for baremetal:deploy_ramdisk_id
    #[arg(long, value_name = "REF", requires = "deploy_kernel")]
    pub deploy_ramdisk: Option<String>,
    /// Modern target: schedule by resources:CUSTOM_<CLASS>=1 (VCPU, MEMORY_MB, DISK_GB set to 0)
    #[arg(long, value_name = "NAME")]
    pub resource_class: Option<String>,
    /// Only these flavors (default: every flavor with a baremetal: key)
    #[arg(long = "flavor", value_name = "NAME")]
    pub flavors: Vec<String>,
    /// Make the change (one transaction); without it only the diff is shown
    #[arg(long)]
    pub apply: bool,
    /// Put back the values of the newest (or --change-set) applied change
    #[arg(long, conflicts_with = "apply")]
    pub restore: bool,
    /// The change set to restore (printed by --apply; default: the newest)
    #[arg(long, value_name = "ID", requires = "restore")]
    pub change_set: Option<String>,
    /// Do not ask for confirmation (required without a terminal)
    #[arg(long)]
    pub yes: bool,
    /// Machine-readable output: the flavor schema and each change
    #[arg(long)]
    pub json: bool,
    /// The project file's options (bm2ironic.toml), used when no flag says what the flavors need
    #[arg(skip)]
    pub project: ProjectOptions,
}

/// What the flavors need: the flags, else the project file's options for this flavor schema (the
/// deploy images for Juno/Kilo Nova, the resource class for modern Nova).
fn flavor_target(args: &FlavorsArgs, schema: FlavorSchema) -> Result<FlavorTarget, Failure> {
    let p = &args.project;
    let given = (&args.deploy_kernel, &args.deploy_ramdisk, &args.resource_class);
    let from_file = match schema {
        FlavorSchema::Juno => (&p.deploy_kernel, &p.deploy_ramdisk, &None),
        FlavorSchema::Modern => (&None, &None, &p.resource_class),
    };
    let chosen = if given == (&None, &None, &None) { from_file } else { given };
    match chosen {
        (Some(k), Some(r), None) => Ok(FlavorTarget::DeployImages { kernel: k.clone(), ramdisk: r.clone() }),
        (None, None, Some(c)) => Ok(FlavorTarget::ResourceClass(c.clone())),
        _ => Err(Failure::usage(match schema {
            FlavorSchema::Juno => "say what the flavors need: --deploy-kernel and --deploy-ramdisk (this is a Juno/Kilo Nova database), or deploy-kernel and deploy-ramdisk in bm2ironic.toml",
            FlavorSchema::Modern => "say what the flavors need: --resource-class (this is modern Nova's API database), or resource-class in bm2ironic.toml",
        })),
    }
}

pub async fn run(global: &GlobalArgs, args: FlavorsArgs) -> Result<(), Failure> {
    let settings = global.settings()?;
    let nova = settings.flavors_db().ok_or_else(|| Failure::usage("no database with the flavors given: use --nova-api-db URL (BM2IRONIC_NOVA_API_DB, nova.conf [api_database]) for modern Nova, or --nova-db URL (BM2IRONIC_NOVA_DB) for Juno/Kilo Nova"))?;
    let access = if args.apply || args.restore { Access::ReadWrite } else { Access::ReadOnly };
    let (db, schema) = steps::open_flavors(&nova.value, access).await?;
    using(db, async |db| {
        if args.restore {
            confirm(
                args.yes,
                &format!("This restores the recorded flavor values in {}", nova.value.redacted()),
                "restore",
            )?;
            let (set, n) = flavors::restore(db, schema, args.change_set.as_deref()).await?;
            print(&format!("restored {n} flavor spec(s) of change set {set}\n"));
            return Ok(());
        }
        let target = flavor_target(&args, schema)?;
        let changes = flavors::plan_changes(db, schema, &target, &args.flavors).await?;
        if args.json {
            print_json(&json!({"schema": schema, "changes": changes}));
        } else {
            let mut t = Table::new(&[("FLAVOR", false), ("KEY", false), ("OLD", false), ("NEW", false)]);
            for c in &changes {
                t.row(vec![
                    c.flavor.clone(),
                    c.key.clone(),
                    c.old.clone().unwrap_or_else(|| "(added)".into()),
                    c.new.clone(),
                ]);
            }
            print(&t.render());
            print(&format!(
                "{} change(s) in {:?} flavor tables{}\n",
                changes.len(),
                schema,
                if args.apply { "" } else { " (diff only: add --apply to make them)" }
            ));
        }
        if args.apply && !changes.is_empty() {
            confirm(
                args.yes,
                &format!("This changes {} flavor spec(s) in {}", changes.len(), nova.value.redacted()),
                "apply",
            )?;
            let set = steps::apply_flavor_changes(db, schema, &changes).await?;
            print(&format!("applied as change set {set} (undo: bm2ironic flavors --restore --change-set {set})\n"));
        }
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a flag, the project file gives what this flavor database needs: the deploy images
    /// for Juno/Kilo Nova, the resource class for modern Nova; a flag wins (#48 item 9).
    #[test]
    fn the_project_file_says_what_the_flavors_need() {
        let project = ProjectOptions {
            deploy_kernel: Some("k".into()),
            deploy_ramdisk: Some("r".into()),
            resource_class: Some("baremetal".into()),
            ..Default::default()
        };
        let args = FlavorsArgs { project, ..Default::default() };
        assert!(
            matches!(flavor_target(&args, FlavorSchema::Juno), Ok(FlavorTarget::DeployImages { kernel, .. }) if kernel == "k")
        );
        assert!(
            matches!(flavor_target(&args, FlavorSchema::Modern), Ok(FlavorTarget::ResourceClass(c)) if c == "baremetal")
        );
        let flag = FlavorsArgs { resource_class: Some("gold".into()), ..args };
        assert!(
            matches!(flavor_target(&flag, FlavorSchema::Modern), Ok(FlavorTarget::ResourceClass(c)) if c == "gold")
        );
        let none = FlavorsArgs::default();
        let e = flavor_target(&none, FlavorSchema::Modern).unwrap_err();
        assert!(e.message().contains("--resource-class") && e.message().contains("bm2ironic.toml"), "{}", e.message());
    }
}
