//! `bm2ironic config`'s computation, pure: the existing nova.conf (and ironic.conf) and the
//! operator's choices in, every change and the new files' text out.

use crate::core::config_gen::ironic::changes as ironic_changes;
use crate::core::config_gen::model::{ConfFile, ConfGenError, ConfInputs, ConfPlan};
use crate::core::config_gen::nova::changes as nova_changes;
use crate::core::config_gen::render::render;
use crate::core::ironic::target::TargetKind;

/// Every change both files need for `inp.target`.
pub fn compute(inp: &ConfInputs) -> Result<ConfPlan, ConfGenError> {
    let mut warnings = Vec::new();
    let mut changes = nova_changes(inp, &mut warnings)?.changes;
    changes.extend(ironic_changes(inp, &mut warnings).changes);
    let next_steps = match inp.target {
        TargetKind::Juno => vec![
            "install the nova.conf on every nova-compute and nova-scheduler host; nova-compute needs the ironic 2014.2 package importable (ClusteredComputeManager)".into(),
            "several old baremetal compute hosts: bm2ironic hosts --to HOST --apply moves their instances to the one host nova-compute runs as".into(),
            "restart nova-scheduler, then nova-compute; bm2ironic watch --log nova-compute=... --all".into(),
        ],
        TargetKind::Modern => vec![
            "install the nova.conf on the nova-compute host(s) that run the Ironic driver; restart nova-compute and nova-scheduler".into(),
            "nova-manage cell_v2 discover_hosts --verbose".into(),
            "several old baremetal compute hosts: bm2ironic hosts --to HOST --apply moves their instances to the new host".into(),
        ],
    };
    Ok(ConfPlan { target: inp.target, changes, warnings, next_steps })
}

/// The whole new text of `file`.
pub fn file_text(plan: &ConfPlan, inp: &ConfInputs, file: ConfFile, original: &str) -> String {
    let kind = match plan.target {
        TargetKind::Juno => "Juno (2014.2)",
        TargetKind::Modern => "modern",
    };
    let (header, drop): (String, &[&str]) = match file {
        ConfFile::Nova => (
            format!("nova.conf for {kind} Nova with the Ironic driver, written by bm2ironic config\nfrom the baremetal nova-compute's nova.conf; `bm2ironic config` without --write-nova lists each change and why"),
            &["baremetal"],
        ),
        ConfFile::Ironic => (
            format!("ironic.conf for {kind} Ironic, written by bm2ironic config from nova.conf{}", if inp.ironic.is_some() { " and the given ironic.conf" } else { "" }),
            &[],
        ),
    };
    render(original, &plan.of(file), drop, &header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::db::url::DbUrl;
    use crate::core::settings::conf_file::IniFile;
    use std::path::Path;

    const NOVA: &str = "[DEFAULT]\nhost = bm-1\nmy_ip = 10.0.0.2\ncompute_driver = nova.virt.baremetal.driver.BareMetalDriver\n\
        [keystone_authtoken]\nidentity_uri = http://k:35357\nauth_uri = http://k:5000/v2.0\nadmin_user = nova\nadmin_password = KsPw9\nadmin_tenant_name = service\n\
        [baremetal]\nsql_connection = mysql://nova:BmPw9@db/nova_bm\n";

    fn inputs(target: TargetKind, noauth: bool) -> ConfInputs {
        ConfInputs {
            target,
            nova: IniFile::parse(Path::new("nova.conf"), NOVA).unwrap(),
            ironic: None,
            ironic_url: Some("http://ironic:6385/".into()),
            ironic_db: Some(DbUrl::parse("mysql://ironic:IrPw9@db/ironic").unwrap()),
            service_user: None,
            noauth,
            host: Some("ironic-compute".into()),
            region: None,
            tftp_server: None,
        }
    }

    fn get<'a>(p: &'a ConfPlan, file: ConfFile, section: &str, option: &str) -> Option<&'a str> {
        p.changes
            .iter()
            .find(|c| c.file == file && c.section == section && c.option == option)
            .and_then(|c| c.new.as_ref().map(|v| v.written()))
    }

    #[test]
    fn juno_and_modern_changes() {
        let j = compute(&inputs(TargetKind::Juno, false)).unwrap();
        assert_eq!(get(&j, ConfFile::Nova, "ironic", "api_endpoint"), Some("http://ironic:6385/v1"));
        assert_eq!(get(&j, ConfFile::Nova, "ironic", "admin_url"), Some("http://k:35357/v2.0"));
        assert_eq!(get(&j, ConfFile::Nova, "DEFAULT", "host"), Some("ironic-compute"));
        assert_eq!(get(&j, ConfFile::Ironic, "DEFAULT", "enabled_drivers"), Some("pxe_ipmitool"));
        assert_eq!(get(&j, ConfFile::Ironic, "conductor", "api_url"), Some("http://ironic:6385"));
        assert_eq!(get(&j, ConfFile::Ironic, "conductor", "force_power_state_during_sync"), Some("false"));
        let m = compute(&inputs(TargetKind::Modern, false)).unwrap();
        assert_eq!(get(&m, ConfFile::Nova, "DEFAULT", "compute_driver"), Some("ironic.IronicDriver"));
        assert_eq!(get(&m, ConfFile::Nova, "ironic", "auth_url"), Some("http://k:35357/v3"));
        assert!(get(&m, ConfFile::Ironic, "database", "connection").unwrap().starts_with("mysql+pymysql://"));
        assert_eq!(get(&m, ConfFile::Ironic, "conductor", "force_power_state_during_sync"), Some("false"));
        assert!(m.next_steps.iter().any(|s| s.contains("cell_v2 discover_hosts")));
        // a noauth Ironic: nova-compute still sends a Keystone token when nova.conf has a service
        // user (Juno's conductor hands it to Glance at each deploy's validation)
        let n = compute(&inputs(TargetKind::Juno, true)).unwrap();
        assert_eq!(get(&n, ConfFile::Nova, "ironic", "admin_username"), Some("nova"));
        assert_eq!(get(&n, ConfFile::Nova, "ironic", "admin_url"), Some("http://k:35357/v2.0"));
        assert!(get(&n, ConfFile::Nova, "ironic", "admin_auth_token").is_none());
        assert!(!n.warnings.iter().any(|w| w.contains("refuses it")), "{:?}", n.warnings);
        // ... and a made-up token, named, when it has none
        let mut bare = inputs(TargetKind::Juno, true);
        bare.nova = IniFile::parse(Path::new("nova.conf"), "[DEFAULT]\nhost = bm-1\n").unwrap();
        let b = compute(&bare).unwrap();
        assert_eq!(get(&b, ConfFile::Nova, "ironic", "admin_auth_token"), Some("noauth"));
        assert!(get(&b, ConfFile::Nova, "ironic", "admin_password").is_none());
        assert!(b.warnings.iter().any(|w| w.contains("Glance behind Keystone refuses it")), "{:?}", b.warnings);
        // Juno logs [ironic] admin_password in clear with debug on: said wherever one is written
        let logged = |p: &ConfPlan| p.warnings.iter().any(|w| w.contains("writes it in clear into its log"));
        assert!(logged(&j) && logged(&n), "{:?}", j.warnings);
        assert!(!logged(&b) && !logged(&m), "{:?} {:?}", b.warnings, m.warnings);
        // what is shown (JSON, table) never holds a password; the written file does
        for p in [&j, &m, &n, &b] {
            let shown = serde_json::to_string(p).unwrap();
            for pw in ["KsPw9", "BmPw9", "IrPw9"] {
                assert!(!shown.contains(pw), "{pw} shown: {shown}");
            }
        }
        let text = file_text(&j, &inputs(TargetKind::Juno, false), ConfFile::Nova, NOVA);
        assert!(text.contains("admin_password = KsPw9") && text.contains("# sql_connection = mysql://nova:BmPw9@"));
    }

    #[test]
    fn no_ironic_url_is_said() {
        let mut i = inputs(TargetKind::Juno, false);
        i.ironic_url = None;
        assert!(compute(&i).unwrap_err().to_string().contains("--ironic-url"));
    }
}
