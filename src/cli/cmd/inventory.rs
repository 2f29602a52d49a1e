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
        let mut app = crate::tui::App::new(
            crate::tui::Mode::ReadOnly,
            prefill(&settings, &Default::default()),
            Default::default(),
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
    let inventory = inventory?;
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
    print(&render_table(&inventory, &summary));
    Ok(())
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

pub fn render_table(inv: &Inventory, s: &InventorySummary) -> String {
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
