//! nova.conf for the Ironic driver: Juno's (the Ironic 2014.2 install guide's options, checked
//! against Nova 2014.2's own option registrations) or modern Nova's (keystoneauth `[ironic]`).

use crate::core::config_gen::keystone::Identity;
use crate::core::config_gen::model::{ChangeList, ConfFile, ConfGenError, ConfInputs, ConfValue};
use crate::core::ironic::target::TargetKind;

pub const JUNO_COMPUTE_DRIVER: &str = "nova.virt.ironic.IronicDriver";
pub const JUNO_COMPUTE_MANAGER: &str = "ironic.nova.compute.manager.ClusteredComputeManager";
pub const JUNO_HOST_MANAGER: &str = "nova.scheduler.ironic_host_manager.IronicHostManager";
pub const NOOP_FIREWALL: &str = "nova.virt.firewall.NoopFirewallDriver";
/// Nova 2014.2's `baremetal_scheduler_default_filters` (nova/scheduler/ironic_host_manager.py):
/// whole machines, so the Exact* filters instead of RamFilter and its friends.
pub const JUNO_BAREMETAL_FILTERS: &str = "RetryFilter,AvailabilityZoneFilter,ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,ExactRamFilter,ExactDiskFilter,ExactCoreFilter";
pub const MODERN_COMPUTE_DRIVER: &str = "ironic.IronicDriver";

const D: &str = "DEFAULT";
const WHY_BAREMETAL: &str =
    "nova baremetal is gone: its section is commented out (nova_bm stays as it is, for a rollback)";

/// `http://ironic:6385` or `.../v1` -> `http://ironic:6385/v1` (Juno's `api_endpoint`).
pub fn v1_endpoint(url: &str) -> String {
    let u = url.trim().trim_end_matches('/');
    if u.ends_with("/v1") {
        u.to_string()
    } else {
        format!("{u}/v1")
    }
}

/// `.../v1` -> the API's root (modern `endpoint_override`, Juno Ironic's `[conductor] api_url`).
pub fn api_root(url: &str) -> String {
    let u = url.trim().trim_end_matches('/');
    u.strip_suffix("/v1").unwrap_or(u).to_string()
}

pub fn changes<'a>(inp: &'a ConfInputs, warnings: &mut Vec<String>) -> Result<ChangeList<'a>, ConfGenError> {
    let mut c = ChangeList::new(ConfFile::Nova, Some(&inp.nova));
    let id = Identity::of(&inp.nova);
    let url = inp.ironic_url.as_deref().ok_or_else(|| {
        ConfGenError::Missing(
            "nova.conf needs Ironic's API endpoint: give --ironic-url URL (BM2IRONIC_IRONIC_URL), e.g. http://ironic-api:6385"
                .into(),
        )
    })?;
    if let Some(h) = &inp.host {
        c.set_plain(
            D,
            "host",
            h,
            "every Ironic node belongs to this one compute host (bm2ironic hosts --to moves the instances to it)",
        );
    }
    c.set_plain(
        D,
        "reserved_host_memory_mb",
        "0",
        "a whole machine is one node: nothing of its memory is held back for a hypervisor",
    );
    c.set_plain(
        D,
        "reserved_host_disk_mb",
        "0",
        "nor of its disk: the exact-match disk filter compares a flavor's disk with the whole local_gb",
    );
    match inp.target {
        TargetKind::Juno => juno(&mut c, inp, &id, url, warnings)?,
        TargetKind::Modern => modern(&mut c, inp, &id, url, warnings)?,
    }
    c.remove_section("baremetal", WHY_BAREMETAL);
    Ok(c)
}

/// Why a made-up token in Juno's `[ironic] admin_auth_token` breaks `nova boot` with a Glance
/// behind Keystone.
/// Juno's Nova declares `[ironic] admin_password` without `secret=True` (fixed in Kilo): at start each
/// service logs its option values at DEBUG, this one in clear. Seen in the upgrade rehearsal on the
/// cloud nova baremetal made (docs/config.md).
const JUNO_PASSWORD_LOGGED: &str = "[ironic] admin_password: Juno's Nova (2014.2) does not treat it as a secret; with [DEFAULT] debug = true every Nova service writes it in clear into its log when it starts. Keep debug off on the hosts that read this nova.conf, or restrict those logs and change the password after the window";

const NO_TENANT: &str = "no admin_tenant_name in [keystone_authtoken]: set [ironic] admin_tenant_name by hand";

const JUNO_NOAUTH_GLANCE: &str = "[ironic] admin_auth_token = noauth: Juno's Ironic conductor hands this token to Glance when it validates a deploy (each nova boot); a Glance behind Keystone refuses it (401) and the boot ends in \"No valid host\". Give --ironic-username and BM2IRONIC_IRONIC_SERVICE_PASSWORD, or a nova.conf whose [keystone_authtoken] has admin_user and admin_password, so that nova-compute sends a Keystone token";

fn juno(
    c: &mut ChangeList,
    inp: &ConfInputs,
    id: &Identity,
    url: &str,
    warnings: &mut Vec<String>,
) -> Result<(), ConfGenError> {
    c.set_plain(
        D,
        "compute_driver",
        JUNO_COMPUTE_DRIVER,
        "Nova drives the machines through Ironic's API (was the baremetal driver)",
    );
    c.set_plain(D, "compute_manager", JUNO_COMPUTE_MANAGER, "Juno's Ironic install guide: one compute host (or several sharing one host name) manages all Ironic nodes; the ironic package must be importable by nova-compute");
    c.set_plain(
        D,
        "scheduler_host_manager",
        JUNO_HOST_MANAGER,
        "the scheduler sees each Ironic node as one host of exact size",
    );
    c.set_plain(
        D,
        "scheduler_use_baremetal_filters",
        "True",
        "the scheduler uses baremetal_scheduler_default_filters for these hosts",
    );
    c.set_plain(
        D,
        "baremetal_scheduler_default_filters",
        JUNO_BAREMETAL_FILTERS,
        "a flavor must match a machine exactly: ExactRamFilter, ExactDiskFilter, ExactCoreFilter (Nova 2014.2's list)",
    );
    c.set_plain(D, "ram_allocation_ratio", "1.0", "no overcommit of a machine's memory");
    c.set_plain(D, "firewall_driver", NOOP_FIREWALL, "no hypervisor to put iptables rules on");
    let s = "ironic";
    c.set_plain(s, "api_endpoint", &v1_endpoint(url), "Ironic's API (--ironic-url)");
    // A noauth Ironic checks no token, but Juno's conductor hands Glance the token of the request
    // it serves (node.validate, at each `nova boot`): a Glance behind Keystone refuses a made-up
    // one. So nova-compute still gets a Keystone token when nova.conf says how to get one.
    let have_keystone = id.service_user(inp.service_user.as_ref()).is_some() && id.admin_base.is_some();
    if inp.noauth && !have_keystone {
        c.set_plain(
            s,
            "admin_auth_token",
            "noauth",
            "the Ironic API runs with auth_strategy = noauth and nova.conf names no Keystone service user",
        );
        for k in ["admin_username", "admin_password", "admin_url", "admin_tenant_name"] {
            c.remove(s, k, "not used with a noauth Ironic");
        }
        warnings.push(JUNO_NOAUTH_GLANCE.into());
        return Ok(());
    }
    let user = id.service_user(inp.service_user.as_ref()).ok_or_else(|| {
        ConfGenError::Missing("no service user for [ironic]: nova.conf's [keystone_authtoken] has no admin_user/admin_password; give --ironic-username and BM2IRONIC_IRONIC_SERVICE_PASSWORD (or --ironic-noauth)".into())
    })?;
    let admin = id.admin_base.as_ref().ok_or_else(|| {
        ConfGenError::Missing(
            "nova.conf's [keystone_authtoken] names no Keystone (identity_uri, auth_host or auth_uri)".into(),
        )
    })?;
    let who = if inp.service_user.is_some() {
        "--ironic-username"
    } else {
        "Nova's own service user ([keystone_authtoken] admin_user)"
    };
    let why = if inp.noauth {
        format!("Keystone user nova-compute calls Ironic as: {who}; Ironic (noauth) checks no token, but its conductor hands this one to Glance when it validates a deploy")
    } else {
        format!("Keystone user nova-compute calls Ironic as: {who}")
    };
    c.set_plain(s, "admin_username", &user.username, &why);
    c.set(s, "admin_password", ConfValue::password(user.password.clone()), "that user's password");
    warnings.push(JUNO_PASSWORD_LOGGED.into());
    c.set_plain(
        s,
        "admin_url",
        &format!("{admin}/v2.0"),
        "Keystone's v2.0 admin endpoint (from [keystone_authtoken]), as Juno's ironicclient wants it",
    );
    match id.project.as_deref() {
        Some(p) => c.set_plain(s, "admin_tenant_name", p, "the service tenant (from [keystone_authtoken])"),
        None => warnings.push(NO_TENANT.into()),
    }
    c.remove(s, "admin_auth_token", "Keystone credentials are used instead");
    Ok(())
}

fn modern(
    c: &mut ChangeList,
    inp: &ConfInputs,
    id: &Identity,
    url: &str,
    warnings: &mut Vec<String>,
) -> Result<(), ConfGenError> {
    c.set_plain(
        D,
        "compute_driver",
        MODERN_COMPUTE_DRIVER,
        "Nova drives the machines through Ironic's API (was the baremetal driver)",
    );
    for k in [
        "compute_manager",
        "scheduler_host_manager",
        "scheduler_use_baremetal_filters",
        "baremetal_scheduler_default_filters",
        "firewall_driver",
    ] {
        c.remove(D, k, "modern Nova has no such option (its placement service does this)");
    }
    c.set_plain(
        "filter_scheduler",
        "track_instance_changes",
        "False",
        "Ironic's install guide: the scheduler need not track instances on bare metal hosts",
    );
    let s = "ironic";
    for k in ["api_endpoint", "admin_username", "admin_password", "admin_url", "admin_tenant_name", "admin_auth_token"]
    {
        c.remove(s, k, "Juno's spelling: modern Nova reads keystoneauth options");
    }
    c.set_plain(s, "endpoint_override", &api_root(url), "Ironic's API (--ironic-url), instead of the catalog's");
    if inp.noauth {
        c.set_plain(s, "auth_type", "none", "the Ironic API runs with auth_strategy = noauth");
        return Ok(());
    }
    let user = id.service_user(inp.service_user.as_ref()).ok_or_else(|| {
        ConfGenError::Missing("no service user for [ironic]: nova.conf's [keystone_authtoken] has no username/password; give --ironic-username and BM2IRONIC_IRONIC_SERVICE_PASSWORD (or --ironic-noauth)".into())
    })?;
    let admin = id.admin_base.as_ref().ok_or_else(|| {
        ConfGenError::Missing(
            "nova.conf's [keystone_authtoken] names no Keystone (auth_url, identity_uri or auth_uri)".into(),
        )
    })?;
    c.set_plain(s, "auth_type", "password", "keystoneauth's password plugin");
    c.set_plain(s, "auth_url", &format!("{admin}/v3"), "Keystone (from [keystone_authtoken])");
    c.set_plain(s, "username", &user.username, "the service user nova-compute calls Ironic as");
    c.set(s, "password", ConfValue::password(user.password.clone()), "that user's password");
    match id.project.as_deref() {
        Some(p) => c.set_plain(s, "project_name", p, "the service project (from [keystone_authtoken])"),
        None => warnings.push("no project in [keystone_authtoken]: set [ironic] project_name by hand".into()),
    }
    let ud = id.user_domain.clone().unwrap_or_else(|| "Default".into());
    let pd = id.project_domain.clone().unwrap_or_else(|| "Default".into());
    c.set_plain(s, "user_domain_name", &ud, "Keystone v3 needs the user's domain");
    c.set_plain(s, "project_domain_name", &pd, "and the project's");
    if let Some(r) = inp.region.clone().or_else(|| id.region.clone()) {
        c.set_plain(s, "region_name", &r, "the region of Ironic's endpoint");
    }
    Ok(())
}
