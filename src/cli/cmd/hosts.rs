//! `bm2ironic hosts --to HOST`: shows, and with `--apply` makes, the move of every instance a
//! migrated node holds to the compute host the Ironic driver's nova-compute runs as
//! (`instances.host`, `instances.node` = the node's uuid); `--restore` puts the recorded values back.

use clap::Args;
use serde_json::json;

use crate::cli::args::GlobalArgs;
use crate::cli::failure::Failure;
use crate::cli::output::{confirm, print, print_json_pretty, Table};
use crate::core::db::Access;
use crate::core::migrate::hosts::{self, HostPlan, HostsError};
use crate::core::using;

#[derive(Args, Debug, Default)]
pub struct HostsArgs {
    /// The compute host nova-compute runs as with the Ironic driver ([DEFAULT] host of its nova.conf)
    #[arg(long, value_name = "HOST", required_unless_present = "restore")]
    pub to: Option<String>,
    /// Make the change (one transaction, recorded); without it only the plan is shown
    #[arg(long)]
    pub apply: bool,
    /// Put back the instances' host and node of the newest (or --change-set) applied change
    #[arg(long, conflicts_with_all = ["apply", "to"])]
    pub restore: bool,
    /// The change set to restore (printed by --apply; default: the newest)
    #[arg(long, value_name = "ID", requires = "restore")]
    pub change_set: Option<String>,
    /// Leave this instance where it is (its uuid, or its node's; repeatable): for an instance whose
    /// node the plan skipped, which Ironic does not hold
    #[arg(long, value_name = "UUID", conflicts_with = "restore")]
    pub leave_out: Vec<String>,
    /// Do not ask for confirmation (required without a terminal)
    #[arg(long)]
    pub yes: bool,
    /// One JSON document: to, moves, unchanged, notes, refusals, applied, change_set
    #[arg(long)]
    pub json: bool,
}

fn shown(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(none)".into())
}

fn print_plan(p: &HostPlan, applying: bool) {
    let mut t = Table::new(&[
        ("INSTANCE", false),
        ("NODE", false),
        ("NOVA_BM HOST", false),
        ("OLD HOST", false),
        ("OLD NODE", false),
        ("NEW HOST", false),
    ]);
    for m in &p.moves {
        t.row(vec![
            m.instance_uuid.clone(),
            m.node_uuid.clone(),
            shown(&m.nova_bm_host),
            shown(&m.old_host),
            shown(&m.old_node),
            m.new_host.clone(),
        ]);
    }
    if !p.moves.is_empty() {
        print(&t.render());
    }
    let froms: Vec<String> =
        p.from_hosts().iter().map(|(h, n)| format!("{} ({n})", crate::core::text::visible_line(&shown(h)))).collect();
    print(&format!(
        "{} instance(s) to move to {} from {} old host(s){}; {} already there\n",
        p.moves.len(),
        crate::core::text::visible_line(&p.to),
        froms.len(),
        if froms.is_empty() { String::new() } else { format!(": {}", froms.join(", ")) },
        p.unchanged,
    ));
    for n in &p.notes {
        print(&format!(
            "left as it is: instance {} (nova_bm node {}): {}\n",
            crate::core::text::visible_line(&n.instance_uuid),
            n.nova_bm_id,
            n.reason
        ));
    }
    for r in &p.refusals {
        print(&format!("refused: {r}\n"));
    }
    if !applying && !p.moves.is_empty() {
        print("(plan only: add --apply to make the change)\n");
    }
}

pub async fn run(global: &GlobalArgs, args: HostsArgs) -> Result<(), Failure> {
    let settings = global.settings()?;
    let nova = settings.nova_db.as_ref().ok_or_else(|| {
        Failure::usage("no Nova database given: use --nova-db URL (BM2IRONIC_NOVA_DB, nova.conf [database] connection); the instances are there")
    })?;
    if args.restore {
        let db = hosts::open_nova(&nova.value, Access::ReadWrite).await?;
        let (set, n) = using(db, async |db| {
            let what = format!("This puts the instances' host and node back in {}", nova.value.redacted());
            confirm(args.yes, &what, "restore")?;
            hosts::restore_hosts(db, args.change_set.as_deref()).await.map_err(Failure::from)
        })
        .await?;
        if args.json {
            print_json_pretty(&json!({"restored": n, "change_set": set}));
        } else {
            print(&format!("restored the host and node of {n} instance(s) of change set {set}\n"));
        }
        return Ok(());
    }
    let to = args.to.clone().unwrap_or_default();
    hosts::check_host_name(&to).map_err(Failure::usage)?;
    let nova_bm = settings.nova_bm_db.as_ref().ok_or_else(|| {
        Failure::usage("no nova_bm database given: use --nova-bm-db URL (BM2IRONIC_NOVA_BM_DB, nova.conf [baremetal] sql_connection); it says which node holds which instance")
    })?;
    // the move is right only for nodes Ironic holds: --apply checks them in Ironic's database
    let ironic = match (&settings.ironic_db, args.apply) {
        (Some(i), _) => Some(i),
        (None, true) => {
            return Err(Failure::usage(
                "hosts --apply checks that Ironic holds every node whose instance moves: give the Ironic database (--ironic-db URL, BM2IRONIC_IRONIC_DB, or --ironic-conf)",
            ))
        }
        (None, false) => None,
    };
    let ironic = match ironic {
        Some(i) => Some(crate::core::db::Db::connect(&i.value, Access::ReadOnly).await?),
        None => None,
    };
    let access = if args.apply { Access::ReadWrite } else { Access::ReadOnly };
    using(ironic, async |ironic| {
        let db = hosts::open_nova(&nova.value, access).await?;
        let redacted = nova.value.redacted();
        let beats = settings.nova_conf.as_ref().map(|c| c.heartbeats.clone()).unwrap_or_default();
        using(db, async |db| plan_and_apply(db, ironic.as_ref(), (&nova_bm.value, beats), &to, &args, redacted).await)
            .await
    })
    .await
}

async fn plan_and_apply(
    db: &crate::core::db::Db,
    ironic: Option<&crate::core::db::Db>,
    (nova_bm, heartbeats): (&crate::core::db::url::DbUrl, crate::core::settings::heartbeat::Heartbeats),
    to: &str,
    args: &HostsArgs,
    nova_shown: &str,
) -> Result<(), Failure> {
    let mut plan = hosts::preview_hosts(nova_bm, db, to, heartbeats).await?;
    plan.leave_out(&args.leave_out).map_err(Failure::usage)?;
    if let Some(i) = ironic {
        hosts::check_ironic_holds(i, &mut plan).await?;
    }
    if !args.json {
        print_plan(&plan, args.apply);
    }
    let mut change_set = None;
    if args.apply && !plan.moves.is_empty() && plan.refusals.is_empty() {
        confirm(
            args.yes,
            &format!(
                "This moves {} instance(s) to host {} in {nova_shown}",
                plan.moves.len(),
                crate::core::text::visible_line(to)
            ),
            "apply",
        )?;
        let set = uuid::Uuid::new_v4().to_string();
        hosts::apply_hosts(db, &plan, &set).await?;
        if !args.json {
            print(&format!("applied as change set {set} (undo: bm2ironic hosts --restore --change-set {set})\n"));
        }
        change_set = Some(set);
    }
    if args.json {
        print_json_pretty(&json!({
            "to": plan.to,
            "moves": plan.moves,
            "unchanged": plan.unchanged,
            "notes": plan.notes,
            "refusals": plan.refusals,
            "applied": change_set.is_some(),
            "change_set": change_set,
        }));
    }
    if !plan.refusals.is_empty() {
        return Err(HostsError::Refused(plan.refusals).into());
    }
    Ok(())
}
