//! The nova_bm inventory as typed rows: `BmNode`, `BmInterface`, and `Inventory` (nodes with their
//! interfaces, plus interfaces whose node does not exist). Passwords are `Secret`s.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use serde::Serialize;

pub use super::mac::{normalize_mac, Mac};
use crate::core::db::secret::Secret;

/// One `bm_nodes` row.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BmNode {
    pub id: i64,
    pub uuid: Option<String>,
    pub service_host: Option<String>,
    pub task_state: Option<String>,
    pub instance_uuid: Option<String>,
    pub instance_name: Option<String>,
    pub cpus: Option<i64>,
    pub memory_mb: Option<i64>,
    pub local_gb: Option<i64>,
    pub pm_address: Option<String>,
    pub pm_user: Option<String>,
    /// Never shown: serialises as "***" (or null when there is none).
    pub pm_password: Option<Secret>,
    pub terminal_port: Option<i64>,
    pub image_path: Option<String>,
    pub pxe_config_path: Option<String>,
    /// The key nova baremetal's deploy helper took a deploy with: still set on every deployed node
    /// (Juno clears it only at teardown) and still accepted by a running helper, so a credential:
    /// never shown, serialises as "***" like `pm_password`; not migrated (docs/mapping.md 5).
    pub deploy_key: Option<Secret>,
    pub root_mb: Option<i64>,
    pub swap_mb: Option<i64>,
    pub ephemeral_mb: Option<i64>,
    pub preserve_ephemeral: Option<bool>,
    pub created_at: Option<NaiveDateTime>,
    pub updated_at: Option<NaiveDateTime>,
    pub deleted_at: Option<NaiveDateTime>,
    /// The `deleted` column as stored: NULL (rows inserted by hand) means live.
    pub deleted_raw: Option<i64>,
    /// Soft-deleted (`deleted` set and not 0).
    pub deleted: bool,
    /// Values of this row that could not be read as what their column holds (a timestamp that is
    /// no date): read as NULL, and named (the plan warns about each row it writes with one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bad_values: Vec<BadValue>,
}

/// A value of a row that is not what its column should hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BadValue {
    pub column: &'static str,
    /// what it holds, as shown to an operator (no control characters, clipped)
    pub found: String,
    /// what it should be ("a date and time")
    pub expected: &'static str,
}

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "column {} holds {}, which is not {}", self.column, self.found, self.expected)
    }
}

/// One `bm_interfaces` row.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BmInterface {
    pub id: i64,
    pub bm_node_id: Option<i64>,
    /// As the operator typed it.
    pub address: Option<String>,
    /// `aa:bb:cc:dd:ee:ff`, or None when the address is not a MAC.
    pub address_normalized: Option<Mac>,
    pub datapath_id: Option<String>,
    pub port_no: Option<i64>,
    pub vif_uuid: Option<String>,
    pub created_at: Option<NaiveDateTime>,
    pub updated_at: Option<NaiveDateTime>,
    pub deleted_at: Option<NaiveDateTime>,
    pub deleted_raw: Option<i64>,
    pub deleted: bool,
    /// as for [`BmNode::bad_values`]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bad_values: Vec<BadValue>,
}

impl BmInterface {
    pub fn normalize(mut self) -> Self {
        self.address_normalized = self.address.as_deref().and_then(normalize_mac);
        self
    }
}

/// A node and its interfaces.
#[derive(Debug, Clone, Serialize)]
pub struct InventoryNode {
    #[serde(flatten)]
    pub node: BmNode,
    pub interfaces: Vec<BmInterface>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct InventorySummary {
    pub nodes: usize,
    pub live: usize,
    pub soft_deleted: usize,
    /// live nodes by `task_state` ("none" for NULL)
    pub by_state: BTreeMap<String, usize>,
    /// per nova-compute host ("-" for none): its live nodes by `task_state`, and "(soft-deleted)"
    pub by_host: BTreeMap<String, BTreeMap<String, usize>>,
    pub with_instance: usize,
    pub interfaces: usize,
    /// interfaces soft-deleted in nova_bm (counted in `interfaces`; never migrated)
    pub soft_deleted_interfaces: usize,
    pub orphan_interfaces: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Inventory {
    pub nodes: Vec<InventoryNode>,
    /// Interfaces whose `bm_node_id` matches no `bm_nodes` row at all.
    pub orphan_interfaces: Vec<BmInterface>,
}

impl Inventory {
    /// Joins nodes and interfaces (see `InventoryBuilder`).
    pub fn join(nodes: Vec<BmNode>, interfaces: Vec<BmInterface>) -> Inventory {
        let mut b = InventoryBuilder::with_capacity(nodes.len());
        for n in nodes {
            b.node(n);
        }
        for i in interfaces {
            b.interface(i);
        }
        b.finish()
    }

    pub fn summary(&self) -> InventorySummary {
        let mut s = InventorySummary {
            nodes: self.nodes.len(),
            orphan_interfaces: self.orphan_interfaces.len(),
            ..Default::default()
        };
        for n in &self.nodes {
            s.interfaces += n.interfaces.len();
            s.soft_deleted_interfaces += n.interfaces.iter().filter(|i| i.deleted).count();
            let host = n.node.service_host.as_deref().unwrap_or("-");
            if !s.by_host.contains_key(host) {
                s.by_host.insert(host.to_string(), BTreeMap::new());
            }
            let Some(host) = s.by_host.get_mut(host) else { continue };
            if n.node.deleted {
                s.soft_deleted += 1;
                bump(host, "(soft-deleted)");
                continue;
            }
            s.live += 1;
            let state = n.node.task_state.as_deref().unwrap_or("none");
            bump(host, state);
            bump(&mut s.by_state, state);
            if n.node.instance_uuid.is_some() {
                s.with_instance += 1;
            }
        }
        s.interfaces += self.orphan_interfaces.len();
        s.soft_deleted_interfaces += self.orphan_interfaces.iter().filter(|i| i.deleted).count();
        s
    }
}

/// Interfaces as they are read, in runs of one `bm_node_id`, each run stored without spare room:
/// gathered beside the nodes' read (on its own task) and given to `InventoryBuilder::interface_runs`
/// once the nodes are in, so that joining them is little more than a move per node.
#[derive(Debug, Default)]
pub struct InterfaceRuns {
    runs: Vec<Vec<BmInterface>>,
    run: Vec<BmInterface>,
    count: usize,
}

impl InterfaceRuns {
    pub fn push(&mut self, i: BmInterface) {
        if self.run.last().is_some_and(|r| r.bm_node_id != i.bm_node_id) {
            self.runs.push(self.run.drain(..).collect());
        }
        self.run.push(i);
        self.count += 1;
    }

    /// How many interfaces so far.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn finish(mut self) -> Vec<Vec<BmInterface>> {
        if !self.run.is_empty() {
            self.runs.push(self.run.drain(..).collect());
        }
        self.runs
    }
}

/// One more under `key` (its String made only the first time).
fn bump(counts: &mut BTreeMap<String, usize>, key: &str) {
    match counts.get_mut(key) {
        Some(c) => *c += 1,
        None => {
            counts.insert(key.to_string(), 1);
        }
    }
}

/// Builds an `Inventory` row by row as nova_bm is read: nodes first (in id order, as read), then
/// interfaces (any order; each node's kept in id order when they come in id order, as read, or
/// when a node's came apart). Each node's
/// interfaces are stored without spare room: at 100k nodes a `Vec` grown by `push` (room for four)
/// and the map that used to group them were most of the reading's peak memory.
#[derive(Debug, Default)]
pub struct InventoryBuilder {
    nodes: Vec<InventoryNode>,
    orphans: Vec<BmInterface>,
    /// consecutive interfaces of one `bm_node_id`, not yet given to their node
    run: Vec<BmInterface>,
    sorted: Option<bool>,
    /// node id to position, when the nodes did not come sorted
    index: Option<std::collections::HashMap<i64, usize>>,
    /// a node got interfaces from two separate runs (input not in node order): shrink at the end
    regrown: bool,
    /// where the last run of interfaces went (sorted nodes)
    last: Option<usize>,
}

impl InventoryBuilder {
    pub fn with_capacity(nodes: usize) -> InventoryBuilder {
        InventoryBuilder { nodes: Vec::with_capacity(nodes), ..Default::default() }
    }

    pub fn node(&mut self, node: BmNode) {
        self.nodes.push(InventoryNode { node, interfaces: Vec::new() });
    }

    pub fn interface(&mut self, i: BmInterface) {
        if self.run.last().is_some_and(|r| r.bm_node_id != i.bm_node_id) {
            self.flush();
        }
        self.run.push(i);
    }

    /// Interfaces gathered while the nodes were read (`InterfaceRuns`), in the order read.
    pub fn interface_runs(&mut self, runs: InterfaceRuns) {
        self.flush();
        for run in runs.finish() {
            self.place(run);
        }
    }

    /// Gives the pending run of interfaces to its node, or to the orphans.
    fn flush(&mut self) {
        if !self.run.is_empty() {
            let run = self.run.drain(..).collect();
            self.place(run);
        }
    }

    /// Gives a run of interfaces of one `bm_node_id` to its node, or to the orphans.
    fn place(&mut self, mut run: Vec<BmInterface>) {
        let Some(first) = run.first() else { return };
        match first.bm_node_id.and_then(|id| self.position(id)) {
            Some(k) => {
                let ifaces = &mut self.nodes[k].interfaces;
                if ifaces.is_empty() {
                    *ifaces = run;
                } else {
                    ifaces.append(&mut run);
                    self.regrown = true;
                }
            }
            None => self.orphans.append(&mut run),
        }
    }

    /// Where the (first) node with this id is: a binary search, as nodes come sorted by id from the
    /// database; a map when they do not.
    fn position(&mut self, id: i64) -> Option<usize> {
        let nodes = &self.nodes;
        let sorted = *self.sorted.get_or_insert_with(|| nodes.windows(2).all(|w| w[0].node.id <= w[1].node.id));
        if sorted {
            // interfaces read in id order mostly come node after node: try the one after the last
            // found before searching (a search reads ~17 nodes far apart in memory)
            let next = self.last.map_or(0, |k| k + 1);
            if nodes.get(next).is_some_and(|n| n.node.id == id) && (next == 0 || nodes[next - 1].node.id != id) {
                self.last = Some(next);
                return Some(next);
            }
            let k = nodes.partition_point(|n| n.node.id < id);
            let found = nodes.get(k).filter(|n| n.node.id == id).map(|_| k);
            self.last = found.or(self.last);
            return found;
        }
        let index = self.index.get_or_insert_with(|| {
            let mut m = std::collections::HashMap::with_capacity(nodes.len());
            for (k, n) in nodes.iter().enumerate() {
                m.entry(n.node.id).or_insert(k);
            }
            m
        });
        index.get(&id).copied()
    }

    pub fn finish(mut self) -> Inventory {
        self.flush();
        if self.regrown {
            for n in &mut self.nodes {
                n.interfaces.sort_by_key(|i| i.id);
                n.interfaces.shrink_to_fit();
            }
        }
        // orphans in id order, however they were read
        self.orphans.sort_by_key(|i| i.id);
        self.nodes.shrink_to_fit();
        Inventory { nodes: self.nodes, orphan_interfaces: self.orphans }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn every_interface_goes_to_its_node_in_id_order(
            ids in proptest::collection::btree_set(0i64..60, 0..30),
            owners in proptest::collection::vec(proptest::option::of(0i64..70), 0..80),
            shuffle_nodes in proptest::bool::ANY,
        ) {
            use proptest::{prop_assert, prop_assert_eq};
            let mut ids: Vec<i64> = ids.into_iter().collect();
            // interfaces as the database gives them (id order), owned by any node, a missing one or none
            let interfaces: Vec<BmInterface> = owners
                .iter()
                .enumerate()
                .map(|(k, o)| BmInterface { id: k as i64 + 1, bm_node_id: *o, ..Default::default() })
                .collect();
            if shuffle_nodes {
                ids.reverse();
            }
            let nodes: Vec<BmNode> = ids.iter().map(|id| BmNode { id: *id, ..Default::default() }).collect();
            // one at a time (`join`), and in runs gathered apart (as `read_inventory` does)
            let by_runs = {
                let mut b = InventoryBuilder::with_capacity(nodes.len());
                nodes.iter().cloned().for_each(|n| b.node(n));
                let mut runs = InterfaceRuns::default();
                interfaces.iter().cloned().for_each(|i| runs.push(i));
                prop_assert_eq!(runs.len(), interfaces.len());
                b.interface_runs(runs);
                b.finish()
            };
            let inv = Inventory::join(nodes, interfaces.clone());
            let ids_of = |inv: &Inventory| {
                let nodes: Vec<Vec<i64>> = inv.nodes.iter().map(|n| n.interfaces.iter().map(|i| i.id).collect()).collect();
                (nodes, inv.orphan_interfaces.iter().map(|i| i.id).collect::<Vec<_>>())
            };
            prop_assert_eq!(ids_of(&by_runs), ids_of(&inv));
            prop_assert!(by_runs.nodes.iter().all(|n| n.interfaces.capacity() == n.interfaces.len()), "spare room");
            prop_assert_eq!(inv.nodes.len(), ids.len());
            for (n, id) in inv.nodes.iter().zip(&ids) {
                prop_assert_eq!(n.node.id, *id);
                let want: Vec<i64> = interfaces.iter().filter(|i| i.bm_node_id == Some(*id)).map(|i| i.id).collect();
                prop_assert_eq!(n.interfaces.iter().map(|i| i.id).collect::<Vec<_>>(), want);
            }
            let orphans: Vec<i64> = interfaces
                .iter()
                .filter(|i| !i.bm_node_id.is_some_and(|o| ids.contains(&o)))
                .map(|i| i.id)
                .collect();
            prop_assert_eq!(inv.orphan_interfaces.iter().map(|i| i.id).collect::<Vec<_>>(), orphans);
        }
    }

    #[test]
    fn interfaces_in_any_order_reach_their_node_without_spare_room() {
        let n = |id| BmNode { id, ..Default::default() };
        let i = |id, node| BmInterface { id, bm_node_id: node, ..Default::default() };
        let ifaces = |inv: &Inventory| -> Vec<(i64, Vec<i64>)> {
            inv.nodes.iter().map(|e| (e.node.id, e.interfaces.iter().map(|i| i.id).collect())).collect()
        };
        // as the database sends them, then shuffled, then with the nodes out of order too
        let sorted = Inventory::join(
            vec![n(1), n(2), n(5)],
            vec![i(9, None), i(1, Some(1)), i(2, Some(1)), i(3, Some(2)), i(4, Some(4)), i(5, Some(5))],
        );
        let shuffled = Inventory::join(
            vec![n(1), n(2), n(5)],
            vec![i(1, Some(1)), i(3, Some(2)), i(4, Some(4)), i(2, Some(1)), i(9, None), i(5, Some(5))],
        );
        let unsorted = Inventory::join(
            vec![n(5), n(1), n(2)],
            vec![i(1, Some(1)), i(3, Some(2)), i(2, Some(1)), i(5, Some(5)), i(4, Some(4)), i(9, None)],
        );
        let want = vec![(1, vec![1, 2]), (2, vec![3]), (5, vec![5])];
        assert_eq!(ifaces(&sorted), want);
        assert_eq!(ifaces(&shuffled), want);
        assert_eq!(ifaces(&unsorted), vec![(5, vec![5]), (1, vec![1, 2]), (2, vec![3])], "nodes keep their order");
        for inv in [&sorted, &shuffled, &unsorted] {
            let mut orphans: Vec<i64> = inv.orphan_interfaces.iter().map(|i| i.id).collect();
            orphans.sort();
            assert_eq!(orphans, vec![4, 9]);
            assert!(inv.nodes.iter().all(|e| e.interfaces.capacity() == e.interfaces.len()));
        }
    }

    #[test]
    fn join_puts_orphans_apart_and_counts() {
        let n = |id, deleted, state: Option<&str>| BmNode {
            id,
            deleted,
            task_state: state.map(Into::into),
            ..Default::default()
        };
        let i = |id, node| BmInterface { id, bm_node_id: node, ..Default::default() };
        let inv = Inventory::join(
            vec![n(1, false, Some("active")), n(2, true, Some("deleted")), n(3, false, None)],
            vec![i(1, Some(1)), i(2, Some(2)), i(3, Some(99)), i(4, None)],
        );
        assert_eq!(inv.nodes[0].interfaces.len(), 1);
        assert_eq!(inv.nodes[1].interfaces.len(), 1, "interfaces of a soft-deleted node stay with it");
        assert_eq!(inv.orphan_interfaces.iter().map(|i| i.id).collect::<Vec<_>>(), vec![3, 4]);
        let s = inv.summary();
        assert_eq!((s.nodes, s.live, s.soft_deleted, s.interfaces, s.orphan_interfaces), (3, 2, 1, 4, 2));
        assert_eq!(s.by_state.get("active"), Some(&1));
        assert_eq!(s.by_state.get("none"), Some(&1));
        assert_eq!(s.by_state.get("deleted"), None, "soft-deleted nodes are not counted by state");
    }
}
