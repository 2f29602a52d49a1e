//! ironic.conf for the migrated nodes: the drivers (Juno) or hardware types and interfaces
//! (modern) the plan writes, `[pxe]` from nova.conf's `[baremetal]`, the database, Keystone, and
//! Glance and Neutron where nova.conf finds them.

use crate::core::config_gen::keystone::Identity;
use crate::core::config_gen::model::{ChangeList, ConfFile, ConfInputs, ConfValue};
use crate::core::config_gen::nova::api_root;
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::plan::PowerManager;
use crate::core::settings::conf_file::IniFile;

const D: &str = "DEFAULT";

/// The Juno driver and the modern hardware type the plan writes for nova.conf's power manager
/// (a manager without an equivalent is written with `fake` / `manual-management`).
fn drivers(nova: &IniFile) -> (&'static str, &'static str) {
    let pm = nova.get_exact("baremetal", "power_manager").unwrap_or("nova.virt.baremetal.ipmi.IPMI");
    match PowerManager::from_class(pm) {
        PowerManager::Ipmi => ("pxe_ipmitool", "ipmi"),
        PowerManager::VirtualPower => ("pxe_ssh", "manual-management"),
        PowerManager::IBoot => ("pxe_iboot", "manual-management"),
        PowerManager::Unsupported(_) => ("fake", "manual-management"),
    }
}

/// Glance's API servers as nova.conf names them (`[glance] api_servers`, Juno's
/// `[DEFAULT] glance_api_servers`, or host/port/protocol).
fn glance_servers(nova: &IniFile) -> Option<String> {
    let g = |s: &str, k: &str| nova.get_exact(s, k).map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
    g("glance", "api_servers").or_else(|| g(D, "glance_api_servers")).or_else(|| {
        let host = g("glance", "host").or_else(|| g(D, "glance_host"))?;
        let port = g("glance", "port").or_else(|| g(D, "glance_port")).unwrap_or_else(|| "9292".into());
        let proto = g("glance", "protocol").or_else(|| g(D, "glance_protocol")).unwrap_or_else(|| "http".into());
        Some(format!("{proto}://{host}:{port}"))
    })
}

fn neutron_url(nova: &IniFile) -> Option<String> {
    let g = |s: &str, k: &str| nova.get_exact(s, k).map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
    g("neutron", "url").or_else(|| g(D, "neutron_url"))
}

fn with_scheme(server: &str) -> String {
    if server.contains("://") {
        server.to_string()
    } else {
        format!("http://{server}")
    }
}

/// `[database] connection`: the Ironic database bm2ironic loads, when given.
fn database(c: &mut ChangeList<'_>, inp: &ConfInputs, warnings: &mut Vec<String>) {
    match &inp.ironic_db {
        Some(u) => c.set(
            "database",
            "connection",
            ConfValue::db_url(u, inp.target),
            "Ironic's database (--ironic-db), the one bm2ironic loads",
        ),
        None => warnings.push("no Ironic database given (--ironic-db): [database] connection is not written".into()),
    }
}

pub fn changes<'a>(inp: &'a ConfInputs, warnings: &mut Vec<String>) -> ChangeList<'a> {
    let mut c = ChangeList::new(ConfFile::Ironic, inp.ironic.as_ref());
    let nova = &inp.nova;
    let (juno_driver, hw_type) = drivers(nova);
    database(&mut c, inp, warnings);
    c.set_plain(
        D,
        "auth_strategy",
        if inp.noauth { "noauth" } else { "keystone" },
        if inp.noauth { "--ironic-noauth" } else { "tokens are checked with Keystone" },
    );
    // Ironic's default (true) switches a machine found off at its BMC back on within a power sync:
    // Nova never sees it off, and a machine switched off for hardware work comes back. nova
    // baremetal never did that; with false Ironic records the change and Nova stops the instance
    c.set_plain(
        "conductor",
        "force_power_state_during_sync",
        "false",
        "a machine found in another power state is recorded, not forced back (as under nova baremetal): switched off at its BMC, its instance ends stopped in Nova",
    );
    // as nova read it (`$state_path/tftp` substituted from nova.conf: Ironic would substitute its
    // own state_path, another directory); one that cannot be worked out is not written
    match nova.interpolated("baremetal", "tftp_root") {
        Ok(root) => {
            let root = root.filter(|r| !r.trim().is_empty()).unwrap_or_else(|| "/tftpboot".into());
            c.set_plain("pxe", "tftp_root", &root, "where nova baremetal kept its TFTP files ([baremetal] tftp_root)");
        }
        Err(e) => {
            warnings.push(format!("{e}: [pxe] tftp_root is not written (set it to nova's TFTP directory by hand)"))
        }
    }
    match inp.tftp_server.clone().or_else(|| nova.get_exact(D, "my_ip").map(str::to_string)) {
        Some(ip) => c.set_plain(
            "pxe",
            "tftp_server",
            &ip,
            "the TFTP server the machines boot from (--tftp-server, else nova.conf's my_ip)",
        ),
        None => warnings
            .push("no TFTP server address (--tftp-server, or my_ip in nova.conf): Ironic uses its own my_ip".into()),
    }
    let append = nova.get_exact("baremetal", "pxe_append_params");
    let glance = glance_servers(nova);
    let neutron = neutron_url(nova);
    match inp.target {
        TargetKind::Juno => {
            c.set_plain(
                D,
                "enabled_drivers",
                juno_driver,
                "the driver the plan writes for nova.conf's [baremetal] power_manager",
            );
            if let Some(a) = append {
                c.set_plain(
                    "pxe",
                    "pxe_append_params",
                    a,
                    "the kernel command line nova baremetal gave the deploy ramdisk",
                );
            }
            if let Some(g) = &glance {
                c.set_plain("glance", "glance_api_servers", g, "Glance, as nova.conf names it");
            }
            if let Some(n) = &neutron {
                c.set_plain("neutron", "url", n, "Neutron, as nova.conf names it");
            }
            if let Some(u) = &inp.ironic_url {
                c.set_plain(
                    "conductor",
                    "api_url",
                    &api_root(u),
                    "the deploy ramdisk calls Ironic back here (--ironic-url)",
                );
            }
        }
        TargetKind::Modern => {
            let manual = hw_type != "ipmi";
            c.set_plain(
                D,
                "enabled_hardware_types",
                hw_type,
                "the hardware type the plan writes for nova.conf's [baremetal] power_manager",
            );
            c.set_plain(D, "enabled_boot_interfaces", "pxe", "the migrated nodes boot by PXE in BIOS mode");
            c.set_plain(
                D,
                "enabled_deploy_interfaces",
                "direct,ramdisk",
                "instance nodes keep their disks with the ramdisk deploy interface; direct for new deploys",
            );
            c.set_plain(
                D,
                "enabled_power_interfaces",
                if manual { "fake" } else { "ipmitool" },
                "power by IPMI, as nova baremetal did",
            );
            c.set_plain(
                D,
                "enabled_management_interfaces",
                if manual { "noop" } else { "ipmitool" },
                "management by IPMI",
            );
            if let Some(a) = append {
                c.set_plain(
                    "pxe",
                    "kernel_append_params",
                    a,
                    "the kernel command line nova baremetal gave the deploy ramdisk ([baremetal] pxe_append_params)",
                );
            }
            if let Some(g) = &glance {
                let first = g.split(',').next().unwrap_or(g).trim();
                c.set_plain("glance", "endpoint_override", &with_scheme(first), "Glance, as nova.conf names it");
            }
            if let Some(n) = &neutron {
                c.set_plain("neutron", "endpoint_override", n, "Neutron, as nova.conf names it");
            }
            deploy(&mut c, inp, nova, warnings);
        }
    }
    if !inp.noauth {
        keystone(&mut c, inp, warnings);
    }
    c
}

/// What a new deploy on a migrated node needs (modern): the boot mode nova baremetal's machines
/// boot in, and the two URLs the deploy ramdisk (ironic-python-agent) uses from the machines'
/// network: Ironic's API (its lookup and heartbeats) and the conductor's HTTP server (the image,
/// cached and served by the conductor: `[agent] image_download_source = http`, Ironic's default).
/// docs/config.md says what the operator sets up for them.
fn deploy(c: &mut ChangeList, inp: &ConfInputs, nova: &IniFile, warnings: &mut Vec<String>) {
    c.set_plain(
        "deploy",
        "default_boot_mode",
        "bios",
        "nova baremetal booted every machine with BIOS pxelinux; Ironic's default is uefi (every migrated node also carries capabilities boot_mode:bios)",
    );
    match &inp.ironic_url {
        Some(u) => c.set_plain(
            "service_catalog",
            "endpoint_override",
            &api_root(u),
            "the deploy ramdisk looks Ironic up and heartbeats here (--ironic-url): the machines' network must reach it",
        ),
        None if inp.noauth => warnings.push(
            "no Ironic API URL (--ironic-url): [service_catalog] endpoint_override is not written, and a noauth Ironic then cannot tell the deploy ramdisk where its API is".into(),
        ),
        None => {}
    }
    match inp.tftp_server.clone().or_else(|| nova.get_exact(D, "my_ip").map(str::to_string)) {
        Some(ip) => {
            c.set_plain(
                "deploy",
                "http_url",
                &format!("http://{ip}:8080"),
                "the conductor's HTTP server, where the deploy ramdisk fetches the image: the TFTP server's address (the machines reach it already), port 8080; serve [deploy] http_root there (a web server)",
            );
            c.set_plain("deploy", "http_root", "/httpboot", "what that web server serves (Ironic's default)");
        }
        None => warnings.push(
            "no address for the conductor's HTTP server (--tftp-server, or my_ip in nova.conf): set [deploy] http_url, or no new deploy can fetch its image".into(),
        ),
    }
}

/// `[keystone_authtoken]` of Ironic (and keystoneauth for the services it calls, modern only).
fn keystone(c: &mut ChangeList, inp: &ConfInputs, warnings: &mut Vec<String>) {
    let id = Identity::of(&inp.nova);
    let (Some(admin), Some(user)) = (id.admin_base.clone(), id.service_user(inp.service_user.as_ref())) else {
        warnings.push("nova.conf's [keystone_authtoken] lacks Keystone or a service user: ironic.conf's [keystone_authtoken] is not written".into());
        return;
    };
    let public = id.public_uri.clone().unwrap_or_else(|| admin.clone());
    let k = "keystone_authtoken";
    let why_user = "the service user (--ironic-username, else Nova's from [keystone_authtoken])";
    match inp.target {
        TargetKind::Juno => {
            c.set_plain(k, "identity_uri", &admin, "Keystone's admin endpoint (from nova.conf)");
            c.set_plain(k, "auth_uri", &format!("{public}/v2.0"), "Keystone's public endpoint (from nova.conf)");
            c.set_plain(k, "admin_user", &user.username, why_user);
            c.set(k, "admin_password", ConfValue::password(user.password.clone()), "that user's password");
            if let Some(p) = &id.project {
                c.set_plain(k, "admin_tenant_name", p, "the service tenant");
            }
        }
        TargetKind::Modern => {
            c.set_plain(k, "www_authenticate_uri", &public, "Keystone's public endpoint (from nova.conf)");
            let ud = id.user_domain.clone().unwrap_or_else(|| "Default".into());
            let pd = id.project_domain.clone().unwrap_or_else(|| "Default".into());
            for s in ["keystone_authtoken", "glance", "neutron", "service_catalog"] {
                c.set_plain(s, "auth_type", "password", "keystoneauth's password plugin");
                c.set_plain(s, "auth_url", &format!("{admin}/v3"), "Keystone (from nova.conf)");
                c.set_plain(s, "username", &user.username, why_user);
                c.set(s, "password", ConfValue::password(user.password.clone()), "that user's password");
                if let Some(p) = &id.project {
                    c.set_plain(s, "project_name", p, "the service project");
                }
                c.set_plain(s, "user_domain_name", &ud, "Keystone v3 domain of the user");
                c.set_plain(s, "project_domain_name", &pd, "and of the project");
            }
        }
    }
}
