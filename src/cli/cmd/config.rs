//! `bm2ironic config`: from the baremetal nova-compute's nova.conf, the changes nova.conf and
//! ironic.conf need for the Ironic driver (printed, passwords masked), or the new files written
//! whole (`--write-nova`, `--write-ironic`: mode 0600, never over the given nova.conf).

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde_json::json;

use crate::cli::args::GlobalArgs;
use crate::cli::failure::Failure;
use crate::cli::output::{print, print_json_pretty, Table};
use crate::core::config_gen::{self, ConfFile, ConfInputs, ServiceUser};
use crate::core::db::Access;
use crate::core::ironic::target::{self, TargetKind};
use crate::core::settings::conf_file::IniFile;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TargetArg {
    /// Nova and Ironic 2014.2
    Juno,
    /// a current Nova and Ironic (keystoneauth, hardware types)
    Modern,
}

#[derive(Args, Debug, Default)]
pub struct ConfigArgs {
    /// The release to write for (default: read from the Ironic database's schema, --ironic-db)
    #[arg(long, value_enum)]
    pub target: Option<TargetArg>,
    /// Write the new nova.conf, whole, to FILE (mode 0600; never the given nova.conf)
    #[arg(long, value_name = "FILE")]
    pub write_nova: Option<PathBuf>,
    /// Write the new ironic.conf, whole, to FILE (mode 0600; from --ironic-conf when given)
    #[arg(long, value_name = "FILE")]
    pub write_ironic: Option<PathBuf>,
    /// Replace an existing output file
    #[arg(long)]
    pub force: bool,
    /// The Keystone user nova-compute calls Ironic as, and Ironic checks tokens with (password:
    /// BM2IRONIC_IRONIC_SERVICE_PASSWORD); default: Nova's own from [keystone_authtoken]
    #[arg(long, value_name = "NAME")]
    pub ironic_username: Option<String>,
    /// The Ironic API runs without Keystone (auth_strategy = noauth)
    #[arg(long)]
    pub ironic_noauth: bool,
    /// [DEFAULT] host of the nova-compute that runs every Ironic node (see `bm2ironic hosts`)
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// [ironic] region_name (modern Nova; default: [keystone_authtoken] region_name)
    #[arg(long, value_name = "NAME")]
    pub region: Option<String>,
    /// [pxe] tftp_server (default: nova.conf's my_ip)
    #[arg(long, value_name = "ADDRESS")]
    pub tftp_server: Option<String>,
    /// One JSON document: target, changes (passwords masked), warnings, next_steps, written
    #[arg(long)]
    pub json: bool,
}

/// A one-line text value from the command line: blanks and control characters are refused.
fn word(what: &str, v: &Option<String>) -> Result<Option<String>, Failure> {
    match v {
        Some(s) if s.trim().is_empty() || s.chars().any(|c| c.is_control() || c.is_whitespace()) => {
            Err(Failure::usage(format!("{what} is blank or holds blanks or control characters: give a plain name")))
        }
        other => Ok(other.clone()),
    }
}

/// Writes `text` to `path` with mode 0600: refuses an existing file without `force`.
fn write_file(path: &Path, text: &str, force: bool) -> Result<(), Failure> {
    let shown = crate::core::text::visible_line(&path.display().to_string()).into_owned();
    let mut o = std::fs::OpenOptions::new();
    o.write(true).mode(0o600);
    if force {
        o.create(true).truncate(true);
    } else {
        o.create_new(true);
    }
    let mut f = o.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Failure::usage(format!("{shown} exists: give another path, or --force to replace it"))
        } else {
            Failure::runtime(format!("cannot write {shown}: {e}"))
        }
    })?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .and_then(|_| f.write_all(text.as_bytes()))
        .and_then(|_| f.sync_all())
        .map_err(|e| Failure::runtime(format!("cannot write {shown}: {e}")))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

pub async fn run(global: &GlobalArgs, args: ConfigArgs) -> Result<(), Failure> {
    let nova_path = global.nova_conf.clone().ok_or_else(|| {
        Failure::usage("bm2ironic config reads the baremetal nova-compute's nova.conf: give --nova-conf FILE")
    })?;
    let settings = global.settings()?;
    for (out, what) in [(&args.write_nova, "--write-nova"), (&args.write_ironic, "--write-ironic")] {
        let given = [Some(&nova_path), global.ironic_conf.as_ref()];
        if let Some(o) = out {
            if given.iter().flatten().any(|p| same_file(p, o)) {
                return Err(Failure::usage(format!(
                    "{what} names a file bm2ironic reads (--nova-conf or --ironic-conf): it never overwrites them; write a new file and move it into place yourself"
                )));
            }
        }
    }
    // a regular file, at most its cap (core/settings/file.rs): never a FIFO or /dev/zero
    let nova_text = crate::core::settings::conf_file::read_text(&nova_path)?;
    let nova = IniFile::parse(&nova_path, &nova_text)?;
    let ironic_base = match &global.ironic_conf {
        Some(p) => {
            let text = crate::core::settings::conf_file::read_text(p)?;
            Some((IniFile::parse(p, &text)?, text))
        }
        None => None,
    };
    let ironic_db = settings.ironic_db.as_ref().map(|s| s.value.clone());
    let target = match (args.target, &ironic_db) {
        (Some(TargetArg::Juno), _) => TargetKind::Juno,
        (Some(TargetArg::Modern), _) => TargetKind::Modern,
        (None, Some(url)) => {
            let db = crate::core::db::Db::connect(url, Access::ReadOnly).await?;
            crate::core::using(db, async |db| target::detect(db, None).await).await?.kind
        }
        (None, None) => {
            return Err(Failure::usage(
                "say which release to write for: --target juno|modern, or give the Ironic database (--ironic-db) to read it from its schema",
            ))
        }
    };
    let service_user = match word("--ironic-username", &args.ironic_username)? {
        Some(u) => Some(ServiceUser {
            username: u,
            password: global.ironic_service_password().ok_or_else(|| {
                Failure::usage("--ironic-username needs its password in BM2IRONIC_IRONIC_SERVICE_PASSWORD (not on the command line: visible in ps)")
            })?,
        }),
        None => None,
    };
    let inputs = ConfInputs {
        target,
        nova,
        ironic: ironic_base.as_ref().map(|(i, _)| i.clone()),
        ironic_url: settings.ironic_url.as_ref().map(|s| s.value.clone()),
        ironic_db,
        service_user,
        noauth: args.ironic_noauth,
        host: word("--host", &args.host)?,
        region: word("--region", &args.region)?,
        tftp_server: word("--tftp-server", &args.tftp_server)?,
    };
    let plan = config_gen::compute(&inputs)?;
    let mut written = Vec::new();
    if let Some(p) = &args.write_nova {
        write_file(p, &config_gen::file_text(&plan, &inputs, ConfFile::Nova, &nova_text), args.force)?;
        written.push(("nova", p.clone()));
    }
    if let Some(p) = &args.write_ironic {
        let base = ironic_base.as_ref().map(|(_, t)| t.as_str()).unwrap_or("");
        write_file(p, &config_gen::file_text(&plan, &inputs, ConfFile::Ironic, base), args.force)?;
        written.push(("ironic", p.clone()));
    }
    tracing::info!(target = ?target, changes = plan.changes.len(), written = ?written, "config computed");
    if args.json {
        let files: serde_json::Map<String, serde_json::Value> =
            written.iter().map(|(k, p)| (k.to_string(), json!(p.display().to_string()))).collect();
        print_json_pretty(&json!({
            "target": plan.target,
            "changes": plan.changes,
            "warnings": plan.warnings,
            "next_steps": plan.next_steps,
            "written": files,
        }));
        return Ok(());
    }
    print_changes(&plan.changes);
    let kind = match target {
        TargetKind::Juno => "Juno (2014.2)",
        TargetKind::Modern => "modern",
    };
    print(&format!("{} change(s) for {kind} Nova and Ironic\n", plan.changes.len()));
    for w in &plan.warnings {
        print(&format!("warning: {w}\n"));
    }
    for (k, p) in &written {
        print(&format!("wrote the new {k}.conf to {} (mode 0600)\n", p.display()));
    }
    if written.is_empty() {
        print("nothing written: --write-nova FILE / --write-ironic FILE write the whole new files\n");
    }
    print("next:\n");
    for s in &plan.next_steps {
        print(&format!("  - {s}\n"));
    }
    Ok(())
}

/// The changes as a table; the values are what the operator copies into a file: never cut (piped
/// or not).
fn print_changes(changes: &[config_gen::ConfChange]) {
    let mut t =
        Table::new(&[("FILE", false), ("SECTION", false), ("OPTION", false), ("OLD -> NEW", false), ("WHY", false)])
            .whole(2)
            .whole(3);
    for c in changes {
        let old = c.old.as_ref().map(|v| v.shown().to_string()).unwrap_or_else(|| "(unset)".into());
        let new = c.new.as_ref().map(|v| v.shown().to_string()).unwrap_or_else(|| "(removed)".into());
        let file = match c.file {
            ConfFile::Nova => "nova.conf",
            ConfFile::Ironic => "ironic.conf",
        };
        t.row(vec![
            file.into(),
            format!("[{}]", c.section),
            c.option.clone(),
            format!("{old} -> {new}"),
            c.why.clone(),
        ]);
    }
    print(&t.render());
}
