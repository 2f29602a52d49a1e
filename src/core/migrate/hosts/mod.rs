//! `bm2ironic hosts`: the instances of several old baremetal compute hosts moved to the one host
//! the Ironic driver's nova-compute runs as (docs/hosts.md). `plan.rs` is the pure plan,
//! `store.rs` reads, applies, records and restores it in Nova's database.

pub mod plan;
pub mod store;

pub use plan::{check_host_name, plan_hosts, HostMove, HostNote, HostPlan};
pub use store::{
    apply_hosts, check_ironic_holds, open_nova, preview_hosts, restore_hosts, HostsError, HOST_CHANGES_TABLE,
};
