//! What the BMC check read (`plan --check-bmc`, `src/core/bmc/`) as conflicts: `bmc-no-answer`,
//! `bmc-refused`, `power-mismatch` (Nova's database needed) and `duplicate-bmc`
//! (docs/conflicts.md). Without a check nothing is raised here.

use super::engine::Checks;
use crate::core::bmc::{BmcReading, Failure, Power};
use crate::core::migrate::conflict::{Action, ConflictCode, Subject};
use crate::core::migrate::plan::fate::Fate;
use crate::core::migrate::plan::uuids::uuid_form;
use crate::core::source::model::BmNode;

impl Checks<'_> {
    /// `bmc-no-answer`, `bmc-refused`, `power-mismatch`, `duplicate-bmc`: this node's reading.
    pub(crate) fn bmc(&mut self, n: &BmNode, f: &mut Fate) {
        let facts = std::sync::Arc::clone(&self.opts.bmc);
        if !facts.given {
            return;
        }
        if let Some(why) = facts.duplicates.get(&n.id) {
            self.bmc_conflict(n, f, ConflictCode::DuplicateBmc, format!("one machine enrolled twice: {why}"));
        }
        let Some(r) = facts.readings.get(&n.id) else { return };
        match (r.failure, r.power) {
            (Some(failure), _) => {
                let code =
                    if failure == Failure::NoAnswer { ConflictCode::BmcNoAnswer } else { ConflictCode::BmcRefused };
                let read = r.read_at.format("%Y-%m-%d %H:%M:%S UTC");
                let error = r.error.as_deref().unwrap_or("");
                let detail =
                    format!("BMC {} as user '{}' ({}, read {read}): {error}", r.address, r.user, failure.as_str());
                self.bmc_conflict(n, f, code, detail);
            }
            (None, Some(power)) => self.power_mismatch(n, f, r, power),
            (None, None) => {}
        }
    }

    /// The power the BMC reported against what Nova says of the node's instance (`vm_state`):
    /// `active` on a machine that is off, `stopped` on one that is on.
    fn power_mismatch(&mut self, n: &BmNode, f: &mut Fate, r: &BmcReading, power: Power) {
        let Some(nova) = self.nova.filter(|_| f.keep_instance) else { return };
        let inst = n.instance_uuid.as_deref().and_then(uuid_form).unwrap_or_default();
        let Some(i) = nova.instances.get(inst.as_ref()).filter(|i| !i.deleted) else { return };
        let vm_state = i.vm_state.as_deref().unwrap_or("").to_ascii_lowercase();
        let read = r.read_at.format("%Y-%m-%d %H:%M:%S UTC");
        let differs = match (vm_state.as_str(), power) {
            ("active", Power::Off) => "the machine is off while Nova says its instance runs (vm_state active)",
            ("stopped", Power::On) => "the machine is on while Nova says its instance is stopped (vm_state stopped)",
            _ => return,
        };
        let detail = format!("{differs}: instance {inst}, BMC {} read {read}", r.address);
        self.bmc_conflict(n, f, ConflictCode::PowerMismatch, detail);
    }

    fn bmc_conflict(&mut self, n: &BmNode, f: &mut Fate, code: ConflictCode, detail: String) {
        let a = self.d.raise(code, Subject::Node { nova_bm_id: n.id }, f.uuid.as_deref(), detail.clone());
        f.apply(code, a);
        if a == Some(Action::Maintenance) {
            let reason = match code {
                ConflictCode::DuplicateBmc => format!("its BMC is another node's too: {detail}"),
                ConflictCode::PowerMismatch => format!("power differs from Nova's: {detail}"),
                _ => format!("BMC check: {detail}: fix driver_info before leaving maintenance"),
            };
            f.maintenance_reasons.push(reason);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::Utc;

    use crate::core::bmc::{BmcFacts, BmcReading, Failure, Power};
    use crate::core::ironic::target::{TargetKind, TargetSchema, TargetState};
    use crate::core::migrate::conflict::{Action, ConflictCode as C, Resolutions};
    use crate::core::migrate::plan::{plan, NodeAction, Plan, PlanOptions};
    use crate::core::source::model::{BmNode, Inventory, InventoryNode};
    use crate::core::source::nova::{NovaFacts, NovaInstance};

    const I1: &str = "11111111-2222-4333-8444-000000000001";
    const I2: &str = "11111111-2222-4333-8444-000000000002";

    fn node(id: i64, instance: Option<&str>) -> InventoryNode {
        let node = BmNode {
            id,
            uuid: Some(format!("aaaaaaaa-2222-4333-8444-00000000000{id}")),
            service_host: Some("c1".into()),
            instance_uuid: instance.map(str::to_string),
            task_state: Some(if instance.is_some() { "active" } else { "deleted" }.into()),
            cpus: Some(1),
            memory_mb: Some(512),
            local_gb: Some(10),
            pm_address: Some(format!("127.0.51.{id}")),
            pm_user: Some("admin".into()),
            ..Default::default()
        };
        InventoryNode { node, interfaces: vec![] }
    }

    fn reading(address: &str, power: Option<Power>, failure: Option<Failure>) -> BmcReading {
        BmcReading {
            address: address.into(),
            user: "admin".into(),
            power,
            guid: None,
            failure,
            error: failure.map(|_| "RAKP 2 HMAC is invalid; Error: Unable to establish IPMI v2 / RMCP+ session".into()),
            read_at: Utc::now(),
            ms: 5,
        }
    }

    fn nova() -> NovaFacts {
        let mut f = NovaFacts::default();
        for (uuid, state) in [(I1, "active"), (I2, "stopped")] {
            let i = NovaInstance {
                uuid: uuid.into(),
                image_ref: Some("img".into()),
                root_gb: Some(1),
                ephemeral_gb: Some(0),
                node: None,
                host: None,
                vm_state: Some(state.into()),
                deleted: false,
                kernel_id: None,
                ramdisk_id: None,
            };
            f.instances.insert(uuid.into(), i);
        }
        f
    }

    /// 1: off, Nova says active; 2: on, Nova says stopped; 3: refused; 4: silent; 5 and 6: one BMC.
    fn planned(facts: BmcFacts, resolutions: &Resolutions) -> Plan {
        let inv = Inventory {
            nodes: vec![
                node(1, Some(I1)),
                node(2, Some(I2)),
                node(3, None),
                node(4, None),
                node(5, None),
                node(6, None),
            ],
            orphan_interfaces: vec![],
        };
        let target = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: vec![], ports: vec![] };
        let opts = PlanOptions {
            deploy_kernel: Some("k".into()),
            deploy_ramdisk: Some("r".into()),
            default_arch: Some("x86_64".into()),
            resource_class: Some("baremetal".into()),
            bmc: Arc::new(facts),
            ..Default::default()
        };
        // the instances' next boot is not this test's business
        let mut resolutions = resolutions.clone();
        resolutions.defaults.insert(C::UnknownBoot, Action::LocalBoot);
        plan(&Arc::new(inv), &target, Some(&nova()), &opts, &resolutions)
    }

    fn facts() -> BmcFacts {
        let mut f = BmcFacts { given: true, ..Default::default() };
        f.readings.insert(1, reading("127.0.51.1", Some(Power::Off), None));
        f.readings.insert(2, reading("127.0.51.2", Some(Power::On), None));
        f.readings.insert(3, reading("127.0.51.3", None, Some(Failure::Credentials)));
        f.readings.insert(4, reading("127.0.51.4", None, Some(Failure::NoAnswer)));
        f.readings.insert(5, reading("127.0.51.5", Some(Power::Off), None));
        f.readings.insert(6, reading("127.0.51.5", Some(Power::Off), None));
        f.find_duplicates();
        f
    }

    fn codes(p: &Plan, id: i64) -> Vec<C> {
        p.conflicts
            .iter()
            .filter(|c| c.node_uuid.as_deref().is_some_and(|u| u.ends_with(&format!("0{id}"))))
            .map(|c| c.code)
            .collect()
    }

    #[test]
    fn each_finding_is_its_conflict_and_only_a_duplicate_blocks() {
        let p = planned(facts(), &Resolutions::default());
        assert_eq!(codes(&p, 1), [C::PowerMismatch, C::UnknownBoot]);
        assert_eq!(codes(&p, 2), [C::PowerMismatch, C::UnknownBoot]);
        assert_eq!(codes(&p, 3), [C::BmcRefused]);
        assert_eq!(codes(&p, 4), [C::BmcNoAnswer]);
        assert_eq!(codes(&p, 5), [C::DuplicateBmc]);
        let refused = p.conflicts.iter().find(|c| c.code == C::BmcRefused).unwrap();
        assert!(
            refused.detail.contains("credentials refused") && refused.detail.contains("RAKP 2 HMAC is invalid"),
            "{}",
            refused.detail
        );
        assert_eq!((refused.action, refused.decided_by), (Some(Action::Migrate), Some("default")), "shown, not silent");
        let off = p.conflicts.iter().find(|c| c.code == C::PowerMismatch).unwrap();
        assert!(off.detail.contains("off while Nova says its instance runs"), "{}", off.detail);
        let actions: Vec<NodeAction> = p.nodes.iter().map(|n| n.action).collect();
        use NodeAction::{Blocked, Create};
        assert_eq!(actions, [Create, Create, Create, Create, Blocked, Blocked]);
    }

    #[test]
    fn maintenance_names_the_finding_and_no_check_raises_nothing() {
        let mut r = Resolutions::default();
        r.defaults.insert(C::BmcRefused, Action::Maintenance);
        r.defaults.insert(C::DuplicateBmc, Action::Maintenance);
        let p = planned(facts(), &r);
        let reason = |id: i64| p.rows(&p.nodes[id as usize - 1]).unwrap().node.maintenance_reason.unwrap_or_default();
        assert!(reason(3).contains("BMC check: BMC 127.0.51.3"), "{}", reason(3));
        assert!(reason(5).contains("its BMC is another node's too"), "{}", reason(5));
        assert_eq!(p.blocking(), 0);
        let none = planned(BmcFacts::default(), &Resolutions::default());
        assert!(none.conflicts.iter().all(|c| c.code == C::UnknownBoot), "{:?}", none.conflicts);
    }
}
