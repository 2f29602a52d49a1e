//! `bm2ironic inventory`: the read-only nova_bm inventory as an aligned table or `--json`.

use std::io::IsTerminal;

use clap::Args;
use serde::Serialize;

use crate::cli::args::{audit_dir, prefill, GlobalArgs};
use crate::cli::failure::Failure;
use crate::cli::output::{note_inline, print, print_json_pretty, Table};
use crate::core::source::model::{BmInterface, Inventory, InventorySummary};
use crate::core::source::nova_bm::NovaBmSource;

#[derive(Args, Debug, Default)]
pub struct InventoryArgs {
    /// One JSON document (nodes with their interfaces, orphan interfaces, summary)
    #[arg(long)]
    pub json: bool,
    /// cpu_arch for nodes whose host has none, as for plan (the browse then notes no missing arch)
    #[arg(long, value_name = "ARCH")]
    pub default_arch: Option<String>,
    /// each host's cpu_arch, from the project file (bm2ironic.toml `arch`)
    #[arg(skip)]
    pub arch: std::collections::BTreeMap<String, String>,
}

#[derive(Serialize)]
struct SourceInfo<'a> {
    url: &'a str,
    server: &'a str,
    schema_version: i64,
}

#[derive(Serialize)]
struct InventoryDoc<'a> {
    source: SourceInfo<'a>,
    #[serde(flatten)]
    inventory: &'a Inventory,
    summary: InventorySummary,
}

pub async fn run(global: &GlobalArgs, args: InventoryArgs) -> Result<(), Failure> {
    let settings = global.settings()?;
    let Some(url) = settings.nova_bm_db.as_ref() else {
        return Err(Failure::usage(
            "no nova_bm database given: use --nova-bm-db URL, BM2IRONIC_NOVA_BM_DB, or --nova-conf with [baremetal] sql_connection",
        ));
    };
    tracing::info!(url = %url.value.redacted(), origin = %url.origin, "inventory: opening nova_bm");
    if !args.json && crate::tui::have_terminal() {
        // on a terminal: the READ-ONLY browse (the wizard's inventory screen, no write keys)
        // the arch and the TFTP trees as plan takes them: what plan would not flag is not flagged
        let plan = crate::cli::args::PlanArgs { default_arch: args.default_arch.clone(), ..Default::default() };
        let mut app = crate::tui::App::new(
            crate::tui::Mode::ReadOnly,
            prefill(&settings, &plan),
            browse_options(&settings, &args),
            Default::default(),
        );
        app.audit_log = audit_dir(global);
        let ctx = crate::tui::Context { auto_prepare: true, ..Default::default() };
        return super::wizard::ended(crate::tui::run_wizard(app, ctx).await);
    }
    let source = NovaBmSource::open(&url.value).await?;
    let show_progress = std::io::stderr().is_terminal();
    let (server, schema_version) = (source.db.server_version.clone(), source.schema_version);
    let inventory = crate::core::using(source, async |source| {
        source
            .read_inventory(|p| {
                if show_progress && p.nodes >= 5000 {
                    note_inline(&format!("\rreading nova_bm: {} nodes, {} interfaces", p.nodes, p.interfaces));
                }
            })
            .await
    })
    .await;
    if show_progress {
        eprint!("\r\x1b[K");
    }
    let inventory = std::sync::Arc::new(inventory?);
    let summary = inventory.summary();
    if args.json {
        let doc = InventoryDoc {
            source: SourceInfo { url: url.value.redacted(), server: &server, schema_version },
            inventory: &inventory,
            summary,
        };
        print_json_pretty(&doc);
        return Ok(());
    }
    let (_, _, plan) =
        crate::core::migrate::prepare::browse_plan(&inventory, &browse_options(&settings, &args), &Default::default());
    print(&render_table(&inventory, &summary, &plan));
    Ok(())
}

/// The browse's plan options: the arch given, the TFTP trees of the settings.
fn browse_options(
    settings: &crate::core::settings::ConnectionSettings,
    args: &InventoryArgs,
) -> crate::core::migrate::plan::PlanOptions {
    crate::core::migrate::plan::PlanOptions {
        default_arch: args.default_arch.clone(),
        arch_by_host: args.arch.clone(),
        tftp_roots: settings.tftp_roots.clone(),
        ..Default::default()
    }
}

/// A node's conflicts for the piped table: `!` first when one blocks; the read-only notes (arch,
/// boot, deploy images: options of a migration) left out; `-` for none.
fn conflicts_cell(plan: &crate::core::migrate::plan::Plan, id: i64) -> String {
    use crate::core::migrate::conflict::ConflictCode as C;
    let Some(n) = plan.nodes.iter().find(|n| n.nova_bm_id == id) else { return "-".into() };
    let real: Vec<C> = n
        .conflicts
        .iter()
        .copied()
        .filter(|c| !matches!(c, C::MissingArch | C::UnknownBoot | C::MissingDeployImages))
        .collect();
    if real.is_empty() {
        return "-".into();
    }
    let mark = if real.iter().any(|c| c.blocking()) { "!" } else { "~" };
    format!("{mark}{}", real.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(","))
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// The node's MACs; a soft-deleted interface marked (it is not migrated).
fn macs(ifaces: &[BmInterface]) -> String {
    let m: Vec<String> = ifaces
        .iter()
        .filter_map(|i| i.address.as_deref().map(|a| if i.deleted { format!("{a}(deleted)") } else { a.to_string() }))
        .collect();
    if m.is_empty() {
        "-".into()
    } else {
        m.join(",")
    }
}

pub fn render_table(inv: &Inventory, s: &InventorySummary, plan: &crate::core::migrate::plan::Plan) -> String {
    let mut t = Table::new(&[
        ("ID", true),
        ("UUID", false),
        ("HOST", false),
        ("STATE", false),
        ("INSTANCE", false),
        ("CPUS", true),
        ("RAM_MB", true),
        ("DISK_GB", true),
        ("BMC", false),
        ("ROW", false),
        ("MACS", false),
        ("CONFLICTS", false),
    ]);
    for n in &inv.nodes {
        let b = &n.node;
        t.row(vec![
            b.id.to_string(),
            opt(&b.uuid),
            opt(&b.service_host),
            opt(&b.task_state),
            opt(&b.instance_uuid),
            opt(&b.cpus),
            opt(&b.memory_mb),
            opt(&b.local_gb),
            opt(&b.pm_address),
            if b.deleted { "deleted".into() } else { "live".into() },
            macs(&n.interfaces),
            conflicts_cell(plan, b.id),
        ]);
    }
    let mut out = t.render();
    if !inv.orphan_interfaces.is_empty() {
        out.push_str("\nInterfaces whose node does not exist (not migrated):\n");
        let mut o = Table::new(&[("ID", true), ("BM_NODE_ID", true), ("MAC", false), ("VIF", false)]);
        for i in &inv.orphan_interfaces {
            o.row(vec![i.id.to_string(), opt(&i.bm_node_id), opt(&i.address), opt(&i.vif_uuid)]);
        }
        out.push_str(&o.render());
    }
    out.push('\n');
    out.push_str(&summary_line(s));
    out.push('\n');
    out
}

pub fn summary_line(s: &InventorySummary) -> String {
    let states: Vec<String> = s.by_state.iter().map(|(k, v)| format!("{k} {v}")).collect();
    format!(
        "{} nodes: {} live, {} soft-deleted; live by state: {}; {} with an instance; {} interfaces ({} soft-deleted), {} orphan",
        s.nodes,
        s.live,
        s.soft_deleted,
        if states.is_empty() { "-".into() } else { states.join(", ") },
        s.with_instance,
        s.interfaces,
        s.soft_deleted_interfaces,
        s.orphan_interfaces
    )
}
