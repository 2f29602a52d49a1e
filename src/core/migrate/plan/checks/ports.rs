//! The node's interfaces, each becoming a port: `invalid-mac`, `duplicate-mac` (the lowest nova_bm
//! id holding a MAC keeps it) and `mac-in-ironic`; `skip-port` leaves the interface out. See
//! docs/conflicts.md, and docs/mapping.md §3 for the ports written.

use super::Checks;
use crate::core::migrate::conflict::{Action, ConflictCode, Subject};
use crate::core::migrate::plan::fate::Fate;
use crate::core::source::model::InventoryNode;

impl Checks<'_> {
    /// The MAC rules over the node's live interfaces, in their order.
    pub(crate) fn interfaces(&mut self, entry: &InventoryNode, f: &mut Fate) {
        let n = &entry.node;
        let uuid_s = f.uuid.clone();
        let uuid_s = uuid_s.as_deref();
        // a node has a handful of interfaces: a short list, not a set of owned strings per node
        let mut seen_here: Vec<&str> = Vec::new();
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
            let first = self.first_holder.get(mac.as_str()).copied();
            if first.is_some_and(|(nid, iid)| (nid, iid) != (n.id, i.id)) || seen_here.contains(&mac.as_str()) {
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
            seen_here.push(mac);
            if let Some(owner) = self.port_macs.get(mac) {
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
