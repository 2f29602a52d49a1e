//! The node's interfaces, each becoming a port: `invalid-mac` (not a MAC, or one no NIC has:
//! broadcast, all zeros, multicast), `duplicate-mac` (the lowest nova_bm
//! id holding a MAC keeps it) and `mac-in-ironic`; `skip-port` leaves the interface out. See
//! docs/conflicts.md, and docs/mapping.md §3 for the ports written.

use std::collections::HashSet;

use super::Checks;
use crate::core::migrate::conflict::{Action, ConflictCode, Subject};
use crate::core::migrate::plan::fate::Fate;
use crate::core::source::model::InventoryNode;

/// Why a well-formed MAC (as `normalize_mac` gives it: `aa:bb:cc:dd:ee:ff`) is no NIC's own address,
/// or None when it can be one: the broadcast address, all zeros, or a multicast address (the low
/// bit of the first octet set, IEEE 802: a group address, never a station's). Ironic would store
/// any of them as a port, and PXE or DHCP would then answer every machine on the segment, or none.
fn unusable_mac(mac: &str) -> Option<&'static str> {
    if mac == "ff:ff:ff:ff:ff:ff" {
        return Some("the broadcast address (ff:ff:ff:ff:ff:ff)");
    }
    if mac == "00:00:00:00:00:00" {
        return Some("all zeros (00:00:00:00:00:00), which no NIC has");
    }
    let first = mac.get(..2).and_then(|o| u8::from_str_radix(o, 16).ok())?;
    (first & 1 == 1).then_some("a multicast address (the low bit of its first octet is set), not one NIC's")
}

impl Checks<'_> {
    /// The MAC rules over the node's live interfaces, in their order.
    pub(crate) fn interfaces(&mut self, entry: &InventoryNode, f: &mut Fate) {
        let n = &entry.node;
        let uuid_s = f.uuid.clone();
        let uuid_s = uuid_s.as_deref();
        // `first_holder` already names the first (node, interface) of every MAC among the nodes that
        // may be migrated, this node's own earlier interfaces included: one lookup per interface.
        // The set only serves a node outside them (none reach here today), and allocates nothing
        // until used. (A list searched per interface made 100,000 interfaces on one node cost
        // 5,000,000,000 comparisons: 16.8 s.)
        let mut seen_here: HashSet<&str> = HashSet::new();
        for i in entry.interfaces.iter().filter(|i| !i.deleted) {
            let isub = Subject::Interface { nova_bm_id: n.id, interface_id: i.id };
            let shown = i.address.as_deref().unwrap_or("(none)");
            let Some(mac) = &i.address_normalized else {
                let a = self.d.raise(
                    ConflictCode::InvalidMac,
                    isub,
                    uuid_s,
                    format!("interface {} address '{shown}' is not a MAC", i.id),
                );
                f.apply(ConflictCode::InvalidMac, a);
                if a == Some(Action::SkipPort) {
                    f.skipped_interfaces.insert(i.id);
                }
                continue;
            };
            if let Some(why) = unusable_mac(mac.as_str()) {
                let a = self.d.raise(
                    ConflictCode::InvalidMac,
                    isub,
                    uuid_s,
                    format!("interface {} address '{shown}' is {why}", i.id),
                );
                f.apply(ConflictCode::InvalidMac, a);
                if a == Some(Action::SkipPort) {
                    f.skipped_interfaces.insert(i.id);
                }
                continue;
            }
            self.mac_probes += 1;
            let first = self.first_holder.get(mac.as_str()).copied();
            let duplicate = match first {
                Some(holder) => holder != (n.id, i.id),
                None => {
                    self.mac_probes += 1;
                    !seen_here.insert(mac.as_str())
                }
            };
            if duplicate {
                let (fnode, _) = first.unwrap_or((n.id, i.id));
                let a = self.d.raise(
                    ConflictCode::DuplicateMac,
                    isub,
                    uuid_s,
                    format!("MAC {mac} (typed '{shown}') is also on nova_bm node {fnode}"),
                );
                f.apply(ConflictCode::DuplicateMac, a);
                if a == Some(Action::SkipPort) {
                    f.skipped_interfaces.insert(i.id);
                }
                continue;
            }
            if let Some(owner) = self.port_macs.get(mac.as_str()) {
                let owner_uuid = owner.and_then(|id| self.node_id_to_uuid.get(&id).and_then(|u| u.as_deref()));
                let ours = owner_uuid.is_some() && owner_uuid == uuid_s && f.replaces.is_none();
                let replaced = f.replaces.is_some() && *owner == f.replaces;
                if !ours && !replaced {
                    let a = self.d.raise(
                        ConflictCode::MacInIronic,
                        isub,
                        uuid_s,
                        format!("MAC {mac} is already a port of Ironic node {}", owner_uuid.unwrap_or("(none)")),
                    );
                    f.apply(ConflictCode::MacInIronic, a);
                    if a == Some(Action::SkipPort) {
                        f.skipped_interfaces.insert(i.id);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Lookups;
    use super::unusable_mac;
    use crate::core::ironic::target::{TargetKind, TargetSchema, TargetState};
    use crate::core::migrate::conflict::{ConflictCode, Resolutions, Subject};
    use crate::core::migrate::plan::fate::Fate;
    use crate::core::migrate::plan::PlanOptions;
    use crate::core::source::model::{BmInterface, BmNode, Inventory};

    #[test]
    fn broadcast_zero_and_multicast_are_no_nics_address() {
        assert!(unusable_mac("ff:ff:ff:ff:ff:ff").unwrap().contains("broadcast"));
        assert!(unusable_mac("00:00:00:00:00:00").unwrap().contains("all zeros"));
        for m in ["01:00:5e:00:00:fb", "33:33:00:00:00:01", "03:00:00:00:00:00", "ff:00:00:00:00:01"] {
            assert!(unusable_mac(m).unwrap().contains("multicast"), "{m}");
        }
        for m in ["52:54:00:00:00:01", "00:00:00:00:00:01", "fe:ff:ff:ff:ff:ff", "02:00:00:00:00:00"] {
            assert_eq!(unusable_mac(m), None, "{m}");
        }
    }

    /// 100,000 interfaces on one node (an attacker's row set: plan time grew with their square,
    /// 16.8 s in the release build): the MAC checks examine a bounded number of entries per
    /// interface, and still find the duplicates however far apart they are on the node.
    #[test]
    fn a_hundred_thousand_interfaces_on_one_node_cost_linear_work() {
        const N: i64 = 100_000;
        let mac = |k: i64| {
            format!("52:54:{:02x}:{:02x}:{:02x}:{:02x}", (k >> 24) & 0xff, (k >> 16) & 0xff, (k >> 8) & 0xff, k & 0xff)
        };
        let mut ifaces: Vec<BmInterface> = (1..=N)
            .map(|k| {
                BmInterface { id: k, bm_node_id: Some(1), address: Some(mac(k)), ..Default::default() }.normalize()
            })
            .collect();
        // the last interface repeats the first's MAC, the middle one the second's (typed otherwise)
        ifaces[(N - 1) as usize].address = Some(mac(1).to_uppercase());
        ifaces[(N / 2) as usize].address = Some(mac(2).replace(':', "-"));
        let ifaces: Vec<BmInterface> = ifaces.into_iter().map(BmInterface::normalize).collect();
        let node = BmNode { id: 1, uuid: Some("bbbbbbbb-0000-4000-8000-000000000001".into()), ..Default::default() };
        let inv = Inventory::join(vec![node], ifaces);
        let target = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: vec![], ports: vec![] };
        let (opts, res) = (PlanOptions::default(), Resolutions::default());
        let lookups = Lookups::new(&inv, &target, None, &opts, &res, false);
        let mut cx = lookups.checks(&opts, None, &res);
        let entry = &inv.nodes[0];
        let mut f = Fate::new(&entry.node);
        cx.interfaces(entry, &mut f);
        assert!(cx.mac_probes <= 2 * N as u64, "{} entries examined for {N} interfaces: not linear", cx.mac_probes);
        let dups: Vec<(i64, String)> = cx
            .into_conflicts()
            .into_iter()
            .filter(|c| c.code == ConflictCode::DuplicateMac)
            .map(|c| match c.subject {
                Subject::Interface { interface_id, .. } => (interface_id, c.detail),
                other => panic!("{other:?}"),
            })
            .collect();
        let ids: Vec<i64> = dups.iter().map(|d| d.0).collect();
        assert_eq!(ids, vec![N / 2 + 1, N], "{dups:?}");
        assert!(dups[1].1.contains(&mac(1)) && dups[1].1.contains("nova_bm node 1"), "{dups:?}");
    }

    /// Broadcast, all-zero and multicast MACs are well formed but no NIC's own: each is
    /// `invalid-mac`, saying which it is, and its port is never written on a default.
    #[test]
    fn broadcast_zero_and_multicast_macs_are_invalid_mac_with_the_reason() {
        let typed =
            ["FF:FF:FF:FF:FF:FF", "00-00-00-00-00-00", "0100.5e00.00fb", "33:33:00:00:00:01", "52:54:00:00:00:09"];
        let ifaces: Vec<BmInterface> = typed
            .iter()
            .enumerate()
            .map(|(k, a)| {
                BmInterface {
                    id: k as i64 + 1,
                    bm_node_id: Some(1),
                    address: Some(a.to_string()),
                    ..Default::default()
                }
                .normalize()
            })
            .collect();
        let node = BmNode { id: 1, uuid: Some("bbbbbbbb-0000-4000-8000-000000000001".into()), ..Default::default() };
        let inv = Inventory::join(vec![node], ifaces);
        let target = TargetState { schema: TargetSchema::known(TargetKind::Modern), nodes: vec![], ports: vec![] };
        let (opts, res) = (PlanOptions::default(), Resolutions::default());
        let lookups = Lookups::new(&inv, &target, None, &opts, &res, false);
        let mut cx = lookups.checks(&opts, None, &res);
        let mut f = Fate::new(&inv.nodes[0].node);
        cx.interfaces(&inv.nodes[0], &mut f);
        let invalid: Vec<(Subject, String, Option<crate::core::migrate::conflict::Action>)> = cx
            .into_conflicts()
            .into_iter()
            .filter(|c| c.code == ConflictCode::InvalidMac)
            .map(|c| (c.subject, c.detail, c.action))
            .collect();
        assert_eq!(invalid.len(), 4, "{invalid:?}");
        for (k, why) in ["broadcast", "all zeros", "multicast", "multicast"].iter().enumerate() {
            assert_eq!(invalid[k].0, Subject::Interface { nova_bm_id: 1, interface_id: k as i64 + 1 });
            assert!(invalid[k].1.contains(why) && invalid[k].1.contains(typed[k]), "{:?}", invalid[k]);
            assert_eq!(invalid[k].2, None, "blocking: undecided");
        }
        assert_eq!(f.action, crate::core::migrate::plan::fate::NodeAction::Blocked);
    }
}
