//! What each decision does: for every conflict code and each of its actions, what is written to
//! Ironic, what happens to the machine and its instance, and what the operator must do afterwards.
//! The one source of this text: the wizard's conflicts pane, `plan`, the run report and docs/conflicts.md.

use super::conflict::{Action, ConflictCode};

/// The consequence of one action on one conflict code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Consequence {
    /// What Ironic receives: the node written or not, in which state, with which ports, maintenance.
    pub ironic: &'static str,
    /// What happens to the machine and the instance running on it.
    pub machine: &'static str,
    /// What the operator must do afterwards ("Nothing." when nothing).
    pub afterwards: &'static str,
}

impl Consequence {
    /// The three parts as one paragraph (plan output, reports).
    pub fn sentence(&self) -> String {
        format!("Ironic: {} Machine: {} Afterwards: {}", self.ironic, self.machine, self.afterwards)
    }
}

const SKIP_NODE: &str = "Not written: no node and no ports in Ironic. nova_bm keeps its row (it is only read).";
const SKIP_MACHINE: &str = "Not touched: a running instance keeps running, but Nova cannot manage it (Ironic has no node with its uuid) until the node is enrolled or adopted by hand, or the instance is deleted in Nova.";
const KEEPS_RUNNING: &str = "Not touched: nothing is powered or rebooted, and a running instance keeps running.";
const GENERATED_MACHINE: &str = "Not touched. If the node held an instance, Nova's records do not name the new uuid, so Nova cannot find the node for it.";

const fn c(ironic: &'static str, machine: &'static str, afterwards: &'static str) -> Consequence {
    Consequence { ironic, machine, afterwards }
}

const fn skip(afterwards: &'static str) -> Consequence {
    c(SKIP_NODE, SKIP_MACHINE, afterwards)
}

/// What `action` does to a conflict of `code` (None when `code` does not allow `action`).
pub fn consequence(code: ConflictCode, action: Action) -> Option<Consequence> {
    use Action as A;
    use ConflictCode as C;
    let found = match (code, action) {
        (C::DeletedNode, A::Skip) => c(
            "Not written, and no ports. Interface rows still attached to it are reported as `orphan-interface`.",
            "None: a soft-deleted node holds no instance, and nothing is touched.",
            "Nothing.",
        ),
        (C::DeletedNode, A::Migrate) => c(
            "Written as a free node (no instance, no `instance_info`, no VIFs): modern Ironic in `--free-state` (default `available`), Juno with `provision_state` NULL. Every other check applies to it, and its interfaces take part in the duplicate-MAC check.",
            "Not touched. With `available`, Nova may schedule onto it at once.",
            "Make sure the machine is really free (clean it) before Nova schedules onto it.",
        ),
        (C::OrphanInterface, A::Skip) => c(
            "The interface is not written as a port. This is the only action: the conflict is a report.",
            "Not touched.",
            "If the NIC is real, create its port on the right node: `baremetal port create MAC --node UUID`.",
        ),
        (C::InvalidMac, A::SkipPort) => c(
            "The node is written without this interface; its other ports are written.",
            "Not touched; a running instance keeps running. Ironic cannot PXE-boot or bind the network on that NIC until a port exists.",
            "Add the port with the right MAC: `baremetal port create MAC --node UUID`.",
        ),
        (C::InvalidMac, A::Skip) => {
            skip("Enroll the node by hand with the right MAC, or fix the row in nova_bm and run bm2ironic again.")
        }
        (C::DuplicateMac, A::SkipPort) => c(
            "The node is written without this interface; the first holder of the MAC keeps the port. If the first holder is skipped for another reason, no node gets that MAC.",
            "Not touched; a running instance keeps running. This node has no port for that NIC.",
            "Find out which machine really has the NIC and fix the port in Ironic.",
        ),
        (C::DuplicateMac, A::Skip) => c(
            "Not written: no node and no ports in Ironic. The first holder of the MAC still gets its port.",
            SKIP_MACHINE,
            "Find out which machine really has the NIC; enroll this node by hand if it is real.",
        ),
        (C::MacInIronic, A::SkipPort) => c(
            "The node is written without this port. The existing Ironic port and its node are left alone.",
            "Not touched; a running instance keeps running. This node has no port for that NIC.",
            "Decide which node owns the NIC; move or delete the port in Ironic.",
        ),
        (C::MacInIronic, A::Skip) => skip("Decide which node owns the NIC, then enroll this node by hand if it is real."),
        (C::UuidInIronic, A::Skip) => c(
            "Not written. The existing Ironic node with this uuid stays as it is.",
            "Not touched, but Nova's instance (if any) now points at that other Ironic node: check it.",
            "Find out what the existing Ironic node is: keep it, or delete it and plan again.",
        ),
        (C::UuidInIronic, A::Replace) => c(
            "Inside the load transaction the existing Ironic node's ports and node row are deleted, then this node is written in its place; `mac-in-ironic` and `instance-in-ironic` ignore the replaced node's ports and instance. If the old node has other rows (history, traits, tags, port groups, volume connectors), MySQL and PostgreSQL refuse the delete and the whole load rolls back.",
            "Not touched; the instance follows this node's nova_bm record.",
            "Nothing of the old node survives: a rollback cannot bring it back (it says NOT restored and names it). Keep a dump of the Ironic database taken before the load.",
        ),
        (C::AlreadyMigrated, A::Skip) => c(
            "Not written again, and not checked for changes since the earlier run: this is what makes a rerun write nothing new.",
            "Not touched: the node an earlier run wrote stays as it is.",
            "Nothing. To migrate it again from scratch, roll that run back first (`bm2ironic rollback --run ID`).",
        ),
        (C::UnrecordedRun, A::Skip) => c(
            "Not written: the node stays in Ironic as that run left it (perhaps half-adopted), neither finished nor removed by this run.",
            "Not touched.",
            "Finish or undo that run where it is kept: rerun `migrate --via api` or `rollback --run ID` with the `--state-dir` (or Ironic database) that holds it.",
        ),
        (C::InstanceInIronic, A::Skip) => c(
            SKIP_NODE,
            "Not touched. Two machines claim one instance; the other Ironic node keeps the claim.",
            "Find the real one in Nova and Ironic and correct the wrong record by hand.",
        ),
        (C::MissingUuid | C::InvalidUuid, A::Generate) => c(
            "Written with a name-based uuid (v5) built from its nova_bm id and host: the same in a rehearsal, the real run and a rerun, so a rerun finds it `already-migrated`.",
            GENERATED_MACHINE,
            "If it held an instance: fix the instance's node in Nova, or treat the node as free.",
        ),
        (C::MissingUuid | C::InvalidUuid, A::Skip) => {
            skip("Give the node a valid uuid in nova_bm and run bm2ironic again, or enroll it by hand.")
        }
        (C::DuplicateUuid, A::Generate) => c(
            "Written with a name-based uuid (v5) built from its nova_bm id and host; the node with the lowest id keeps the original uuid.",
            GENERATED_MACHINE,
            "If it held an instance: fix the instance's node in Nova, or treat the node as free.",
        ),
        (C::DuplicateUuid, A::Skip) => skip("Find out which machine the uuid belongs to; enroll the other by hand."),
        (C::MidDeploy, A::Maintenance) => c(
            "Written `active` with its instance, `instance_info` and VIFs, in maintenance with the reason `nova_bm task_state was '<state>' (deploy not finished) at migration`. Ironic will not deploy to it or clean it while it is in maintenance.",
            "Not touched: whatever the interrupted deploy left on the machine stays as it is.",
            "Look at the machine. If the instance works, lift maintenance (`baremetal node maintenance unset UUID`); if not, delete the instance in Nova, then clean the node.",
        ),
        (C::MidDeploy, A::Skip) => skip("Better: let the deploy finish before stopping nova-compute, then plan again."),
        (C::FailedDeploy, A::Maintenance) => c(
            "With an instance: written `active` with it, in maintenance; without one: written as a free node in maintenance. The reason is `nova_bm task_state was '<state>' (failed deploy) at migration`.",
            "Not touched: a failed instance stays failed.",
            "Usually: delete the instance in Nova, then clean the node and lift maintenance.",
        ),
        (C::FailedDeploy, A::Skip) => skip("Delete the failed instance in Nova; enroll the node by hand when it is clean."),
        (C::InstanceMissingInNova, A::Free) => c(
            "Written as a free node: no `instance_uuid`, `instance_name`, `instance_info` or VIFs. Modern: `--free-state` (default `available`); Juno: `provision_state` NULL.",
            "Not touched, but it may still run the old OS, and with `available` Nova may schedule onto it at once.",
            "Clean the machine (or plan with `--free-state manageable`) before Nova deploys onto it.",
        ),
        (C::InstanceMissingInNova, A::Maintenance) => c(
            "Written `active` with the instance uuid, in maintenance with the reason `instance <uuid> is not in Nova's instances table at migration` (or `is deleted in Nova`). There is no `image_source`.",
            "Not touched: whatever runs on it keeps running, and Nova has no live record of it.",
            "Decide whether the machine is in use: clean it and lift maintenance, or recreate Nova's record.",
        ),
        (C::InstanceMissingInNova, A::Skip) => {
            skip("Decide whether the machine is in use; enroll it by hand, free or with its instance.")
        }
        (C::MissingBmc, A::Maintenance) => c(
            "Written with the driver and whatever `driver_info` exists, in maintenance with the reason `no BMC address in nova_bm: add driver_info before leaving maintenance`.",
            "Not touched; a running instance keeps running. Ironic cannot read or set its power state.",
            "`baremetal node set UUID --driver-info ipmi_address=...` (or the SSH and iBoot equivalents), then lift maintenance.",
        ),
        (C::MissingBmc, A::Skip) => skip("Find the BMC address; enroll the node by hand with it."),
        (C::UnsupportedPower, A::Maintenance) => c(
            "Written with driver `manual-management` (modern) or `fake` (Juno), no power settings (only the deploy images), in maintenance with the reason `nova baremetal power manager <class> has no Ironic equivalent: no power control`.",
            "Not touched; a running instance keeps running. Ironic has no power control over it.",
            "Enable `manual-management` (Juno: `fake`) on the conductor; give each node a real driver and `driver_info` (e.g. `ipmi`, `redfish`) before lifting maintenance.",
        ),
        (C::UnsupportedPower, A::Skip) => skip("Enroll the nodes by hand with a driver this Ironic has."),
        (C::MissingArch, A::Skip) => {
            skip("The real fix is the architecture: `--arch HOST=ARCH` or `--default-arch ARCH`, then plan again.")
        }
        (C::IncompleteProperties, A::Maintenance) => c(
            "Written; NULL values are left out of `properties` (zero is written as it is); in maintenance with the reason `properties incomplete in nova_bm (<keys>)`.",
            KEEPS_RUNNING,
            "Set the real values (`baremetal node set UUID --property cpus=...`, or inspect the node), then lift maintenance.",
        ),
        (C::IncompleteProperties, A::Migrate) => c(
            "Written, not in maintenance; NULL values are left out of `properties`, zero is written as it is.",
            "Not touched; a running instance keeps running. Nova's scheduler and Ironic's validation read the missing values.",
            "Set the real values (`baremetal node set UUID --property cpus=...`, or inspect the node).",
        ),
        (C::NoMatchingFlavor, A::Migrate) => c(
            "Written free (`available`), not in maintenance, with nova_bm's properties.",
            "Not touched. Nova's scheduler never places an instance on it: no flavor asks exactly its cpus, memory_mb, disk and cpu_arch, and `nova boot` of those flavors ends in \"No valid host\" when no other node fits.",
            "Add a flavor whose vcpus, memory_mb, root_gb + ephemeral_gb (+ swap) and cpu_arch are the node's, or correct the node's properties.",
        ),
        (C::NoMatchingFlavor, A::Maintenance) => c(
            "Written free, in maintenance with the reason `no Nova flavor fits it: add one, or correct its properties`.",
            KEEPS_RUNNING,
            "Add a matching flavor or correct the node's properties, then lift maintenance.",
        ),
        (C::NoMatchingFlavor, A::Skip) => skip("Enroll it by hand when a flavor is meant for it."),
        (C::IncompleteProperties, A::Skip) => skip("Set the values in nova_bm and run bm2ironic again, or enroll by hand."),
        (C::NovaComputeRunning, A::Ignore) => c(
            "The load goes ahead; no node is changed by this decision.",
            "The baremetal nova-compute keeps running and still drives the same machines through nova_bm: two managers for one machine.",
            "Stop that nova-compute (step 3 of the runbook) at once.",
        ),
        (C::UnknownState, A::Maintenance) => c(
            "Written in maintenance, with its instance (`active`) if the row holds one, free otherwise; the reason names the state.",
            "Not touched: whatever the machine does, it keeps doing.",
            "Find out what the machine runs; lift maintenance when it is known.",
        ),
        (C::UnknownState, A::Skip) => skip("Find out what the machine runs; enroll it by hand."),
        (C::InconsistentState, A::Maintenance) => c(
            "Written in maintenance with the instance the row names (when it is a valid uuid), free otherwise; the reason names the state.",
            "Not touched: whatever the machine does, it keeps doing.",
            "Check Nova for the instance (`openstack server show`), then keep it and lift maintenance, or delete it and clean the node.",
        ),
        (C::InconsistentState, A::Skip) => skip("Check Nova for the instance; enroll the node by hand."),
        (C::DuplicateInstance, A::Free) => c(
            "Written as a free node, without the instance, its `instance_info` or VIFs.",
            "Not touched. The other claimant keeps the instance; if this machine really runs it, Nova will not know.",
            "One machine runs the instance: check the freed one before Nova schedules onto it.",
        ),
        (C::DuplicateInstance, A::Skip) => skip("Find the machine that really runs the instance."),
        (C::AmbiguousInstance, A::KeepInstance) => c(
            "Written with the instance (active, `instance_info`, VIFs); the other claimants must be freed, held or skipped.",
            "Not touched: Ironic takes over the machine that runs the instance.",
            "Be sure first (console, BMC): Nova manages the instance through this node, and a delete cleans its disk.",
        ),
        (C::AmbiguousInstance, A::Free) => c(
            "Written as a free node, without the instance, its `instance_info` or VIFs.",
            "Not touched. If it really runs the instance, nothing knows it any more.",
            "Check it before Nova schedules onto it: a deploy wipes its disk.",
        ),
        (C::AmbiguousInstance, A::Maintenance) => c(
            "Written without the instance, in maintenance (`claimed instance <uuid> with other nova_bm nodes: unproven`).",
            "Not touched while it is in maintenance.",
            "Find the machine that runs it; give that node the instance, then lift maintenance.",
        ),
        (C::AmbiguousInstance, A::Skip) => skip("Find the machine that really runs the instance; enroll it by hand."),
        (C::InvalidSize, A::Maintenance) => c(
            "Written without the impossible values, in maintenance with the reason `impossible values in nova_bm left out (<values>): set them in Ironic`.",
            KEEPS_RUNNING,
            "Set the real values in Ironic, then lift maintenance.",
        ),
        (C::InvalidSize, A::Skip) => skip("Correct the values in nova_bm and run bm2ironic again, or enroll by hand."),
        (C::IncompleteInstanceInfo, A::Maintenance) => c(
            "Written `active` with its instance and what is known of `instance_info`, in maintenance with the reason `instance_info lacks <keys>: set it before Juno rebuilds or tears the instance down`.",
            "Not touched: a running instance keeps running. While `image_source` or `root_gb` is missing, Juno cannot rebuild the instance or tear it down (deleting it in Nova fails).",
            "Set the missing keys (`ironic node-update UUID add instance_info/image_source=GLANCE_ID instance_info/root_gb=GB`), then lift maintenance.",
        ),
        (C::IncompleteInstanceInfo, A::Skip) => skip("Give `--nova-db` (Nova's `instances.image_ref` and `root_gb`) and run bm2ironic again, or enroll the node by hand."),
        (C::UnknownBoot, A::LocalBoot) => c(
            "Written `active` with its instance as without a learned boot: no `ramdisk` deploy interface, no `instance_info.kernel`/`ramdisk`; Ironic boots it from its disk (modern Ironic) or Juno's own PXE config. The run report notes the operator's word.",
            "Not touched: a running instance keeps running. Its next reboot boots from the disk: only a bootloader on it (which nova baremetal never installed) brings the instance back.",
            "Make sure the disk really boots (a bootloader installed in the instance), or the next reboot leaves the machine without its instance.",
        ),
        (C::UnknownBoot, A::Maintenance) => c(
            "Written `active` with its instance as without a learned boot, in maintenance with the reason `next boot unknown (<why>): give its PXE config or install a bootloader`.",
            "Not touched: a running instance keeps running. While in maintenance Ironic does not power or reboot it; a reboot from inside the instance boots from the disk.",
            "Copy the instance's PXE config from its compute host (`<tftp_root>/<instance uuid>/config`, `kernel`, `ramdisk`) and migrate it again, or install a bootloader; then lift maintenance.",
        ),
        (C::UnknownBoot, A::Skip) => skip("Copy the instance's PXE config from its compute host (`--tftp-root HOST=DIR`) and run bm2ironic again."),
        _ => return bmc(code, action),
    };
    code.actions().contains(&action).then_some(found)
}

/// The BMC check's codes (issue #51), apart: `consequence` is long enough.
fn bmc(code: ConflictCode, action: Action) -> Option<Consequence> {
    use Action as A;
    use ConflictCode as C;
    let found = match (code, action) {
        (C::BmcNoAnswer | C::BmcRefused, A::Migrate) => c(
            "Written as planned (with its instance, `active`, if it has one), with nova_bm's BMC address and credentials in `driver_info`.",
            "Not touched by bm2ironic. Ironic's takeover will fail for this node: it cannot read the power state with these credentials (`bmc-error` in `verify --takeover`), and power actions on it fail.",
            "Fix the BMC (address, user, password, privilege) and `baremetal node set UUID --driver-info ...` before the takeover, or right after it.",
        ),
        (C::BmcNoAnswer | C::BmcRefused, A::Maintenance) => c(
            "Written as planned, in maintenance with the reason `BMC check: <what it said>: fix driver_info before leaving maintenance`.",
            "Not touched: while in maintenance Ironic does not take the node over, sync or change its power; a running instance keeps running.",
            "Fix the BMC and `driver_info`, check `baremetal node validate UUID`, then lift maintenance.",
        ),
        (C::BmcNoAnswer | C::BmcRefused, A::Skip) => skip("Fix the BMC, run `plan --check-bmc` again, and migrate the node then or enroll it by hand."),
        (C::PowerMismatch, A::Migrate) => c(
            "Written as planned; `power_state` stays NULL, so Ironic reads the real power from the BMC.",
            "Not touched by bm2ironic. After the takeover Nova's power sync sees Ironic's power and records it: an instance Nova calls running on a machine that is off is marked stopped (Nova calls stop); one Nova calls stopped on a machine that is on is stopped by Nova through Ironic, which powers the machine off.",
            "Decide which is right before the takeover: power the machine on or off, or start or stop the instance in Nova.",
        ),
        (C::PowerMismatch, A::Maintenance) => c(
            "Written as planned, in maintenance with the reason `power differs from Nova's: <which>`.",
            "Not touched: in maintenance Ironic takes no power action on it and Nova's power sync changes nothing; whatever it runs keeps running.",
            "Bring Nova and the machine to agree, then lift maintenance.",
        ),
        (C::PowerMismatch, A::Skip) => skip("Bring Nova and the machine to agree, then migrate the node."),
        (C::DuplicateBmc, A::Maintenance) => c(
            "Written as planned, in maintenance with the reason `its BMC is another node's too: <evidence>`; Ironic has two nodes for one machine.",
            "Not touched while in maintenance. Out of it, a power action, a clean or a deploy on either node acts on the one machine, and the instance of the other.",
            "Find which nova_bm row is the real one, delete the other node from Ironic, then lift maintenance.",
        ),
        (C::DuplicateBmc, A::Skip) => skip("Keep the row that is the real machine (skip only the other); enroll what is left by hand."),
        _ => return None,
    };
    code.actions().contains(&action).then_some(found)
}

/// What fixes the cause, for the codes whose real answer is not a decision.
pub fn fix(code: ConflictCode) -> Option<&'static str> {
    match code {
        ConflictCode::MissingDeployImages => Some(
            "No decision (`--resolve missing-deploy-images=...` is refused): give both `--deploy-kernel` and `--deploy-ramdisk` (Glance ids, or `file://` paths for a standalone Ironic). Without them every node fails Ironic's validation.",
        ),
        ConflictCode::MissingArch => Some("Give the architecture: `--arch HOST=ARCH` or `--default-arch ARCH`."),
        ConflictCode::NovaComputeRunning => Some("Stop the baremetal nova-compute on that host, then plan again."),
        _ => None,
    }
}

/// The Markdown list docs/conflicts.md holds for `code` (between its markers).
pub fn markdown(code: ConflictCode) -> String {
    let mut out = String::new();
    for a in code.actions() {
        if let Some(k) = consequence(code, *a) {
            out.push_str(&format!(
                "- `{a}`\n  - Ironic: {}\n  - Machine: {}\n  - Afterwards: {}\n",
                k.ironic, k.machine, k.afterwards
            ));
        }
    }
    if let Some(f) = fix(code) {
        out.push_str(&format!("- Fix: {f}\n"));
    }
    out
}

/// The marker lines around a code's generated list in docs/conflicts.md.
pub fn doc_markers(code: ConflictCode) -> (String, String) {
    (
        format!("<!-- consequences {code}: generated from src/core/migrate/consequences.rs -->"),
        format!("<!-- /consequences {code} -->"),
    )
}

/// `text` (docs/conflicts.md) with every code's generated list replaced by the code's own; errors name
/// a code whose markers are missing.
pub fn rewrite_doc(text: &str) -> Result<String, String> {
    let mut out = text.to_string();
    for code in ConflictCode::ALL {
        let (begin, end) = doc_markers(*code);
        let (Some(b), Some(e)) = (out.find(&begin), out.find(&end)) else {
            return Err(format!("docs/conflicts.md has no markers for {code}: add `{begin}` and `{end}`"));
        };
        if e < b {
            return Err(format!("docs/conflicts.md: the markers of {code} are out of order"));
        }
        out = format!("{}{begin}\n{}{}", &out[..b], markdown(*code), &out[e..]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_and_action_has_a_consequence() {
        for code in ConflictCode::ALL {
            for a in code.actions() {
                let k = consequence(*code, *a).unwrap_or_else(|| panic!("{code} {a} has no consequence"));
                for part in [k.ironic, k.machine, k.afterwards] {
                    assert!(part.ends_with('.') || part.ends_with(')'), "{code} {a}: '{part}' is a sentence");
                }
            }
            assert!(!code.actions().is_empty() || fix(*code).is_some(), "{code} has neither action nor fix");
        }
        assert_eq!(consequence(ConflictCode::MidDeploy, Action::Free), None, "not an action of the code");
    }

    /// docs/conflicts.md holds the same text (BM2IRONIC_UPDATE_DOCS=1 rewrites it from the code).
    #[test]
    fn the_docs_say_what_the_code_says() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/conflicts.md");
        let text = std::fs::read_to_string(path).unwrap();
        let want = rewrite_doc(&text).unwrap();
        if std::env::var_os("BM2IRONIC_UPDATE_DOCS").is_some() {
            std::fs::write(path, &want).unwrap();
            return;
        }
        assert!(
            text == want,
            "docs/conflicts.md differs from src/core/migrate/consequences.rs: run `BM2IRONIC_UPDATE_DOCS=1 cargo test --lib consequences`"
        );
    }
}
