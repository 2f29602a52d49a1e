//! `bm2ironic juno-boot`: on the Juno conductor host, after Juno's takeover (and after any later
//! one), puts each migrated instance node's PXE config back to `default boot` with its root uuid;
//! without `--apply` it only shows what it would change. The transform and the choice of nodes are
//! `core::ironic::juno_boot`; here the files: no symlink followed, at most 64 KiB read, written
//! through a temporary file and a rename with the old mode and owner. docs/juno.md.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use crate::cli::args::GlobalArgs;
use crate::cli::failure::Failure;
use crate::cli::output::{print, print_json, Table};
use crate::core::ironic::juno_boot::{self, Switch, MAX_CONFIG_BYTES};
use crate::core::ironic::target::{self, TargetKind};
use crate::core::kind::Kind;
use crate::core::migrate::prepare::PrepareError;
use crate::core::text::visible_line;

#[derive(Args, Debug, Default)]
pub struct JunoBootArgs {
    /// Juno's TFTP root on this conductor host (its ironic.conf [pxe] tftp_root, e.g. /tftpboot)
    #[arg(long, value_name = "DIR")]
    pub pxe_tftp_root: PathBuf,
    /// Write the changes; without it only what would change is shown
    #[arg(long)]
    pub apply: bool,
    /// Machine-readable output: each node, its status and what was (or would be) changed
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: JunoBootArgs) -> Result<(), Failure> {
    let settings = global.settings()?;
    let tgt = settings.ironic_db.as_ref().ok_or(PrepareError::NoTarget)?;
    let db = target::connect(&tgt.value).await?;
    let rows = crate::core::using(db, async |db| match target::detect(db, None).await {
        Ok(s) if s.kind == TargetKind::Juno => juno_boot::read_nodes(db).await.map_err(Failure::from),
        Ok(_) => Err(Failure::usage("the Ironic database is not Juno's: juno-boot is for Juno Ironic 2014.2 only")),
        Err(e) => Err(e.into()),
    })
    .await?;
    let root = &args.pxe_tftp_root;
    if !fs::metadata(root).is_ok_and(|m| m.is_dir()) {
        return Err(Failure::usage(format!(
            "--pxe-tftp-root {}: not a directory",
            visible_line(&root.display().to_string())
        )));
    }
    let mut skipped = 0;
    let mut out = Vec::new();
    for c in juno_boot::candidates(&rows) {
        let result = match &c.root {
            Ok(uuid) => one(root, &c.uuid, uuid, args.apply),
            Err(why) => Err(why.clone()),
        };
        let (status, detail) = match result {
            Ok(s) => s,
            Err(why) => {
                skipped += 1;
                ("skipped", why)
            }
        };
        out.push((c.uuid, status, detail));
    }
    if args.json {
        let nodes: Vec<_> = out.iter().map(|(n, s, d)| json!({"node": n, "status": s, "detail": d})).collect();
        print_json(&json!({"applied": args.apply, "nodes": nodes}));
    } else {
        let mut t = Table::new(&[("NODE", false), ("STATUS", false), ("DETAIL", false)]);
        for (n, s, d) in &out {
            t.row(vec![visible_line(n).into_owned(), s.to_string(), visible_line(d).into_owned()]);
        }
        print(&t.render());
        let hint = if args.apply || out.iter().all(|o| o.1 != "would switch") { "" } else { " (--apply to write)" };
        print(&format!("{} node(s), {skipped} skipped{hint}\n", out.len()));
    }
    if skipped > 0 {
        let message = format!("{skipped} node(s) skipped: their next boot is not fixed (see above)");
        return Err(Failure::of(Kind::Differences, message));
    }
    Ok(())
}

/// One node's config: `(status, detail)`, or why it is skipped.
fn one(root: &Path, node: &str, root_uuid: &str, apply: bool) -> Result<(&'static str, String), String> {
    let dir = root.join(node);
    let path = dir.join("config");
    let shown = format!("{node}/config");
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.file_type().is_symlink() => return Err(format!("{node}: a symlink, not followed")),
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(format!("{node}: not a directory")),
        Err(_) => return Err(format!("{shown}: missing (has Juno taken the node over?)")),
    }
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => return Err(format!("{shown}: a symlink, not followed")),
        Ok(m) if !m.is_file() => return Err(format!("{shown}: not a regular file")),
        Ok(m) if m.len() > MAX_CONFIG_BYTES => return Err(format!("{shown}: over {MAX_CONFIG_BYTES} bytes")),
        Ok(m) => m,
        Err(_) => return Err(format!("{shown}: missing (has Juno taken the node over?)")),
    };
    let text = read_capped(&path).map_err(|e| format!("{shown}: {e}"))?;
    match juno_boot::switch(&text, root_uuid) {
        Switch::AlreadyBoot => Ok(("boot", format!("{shown}: already `default boot`"))),
        Switch::NotJunoForm(why) => Err(format!("{shown}: not Juno's form ({why})")),
        Switch::Switched(new) => {
            let what = format!("{shown}: `default boot`, root=UUID={root_uuid}");
            if !apply {
                return Ok(("would switch", what));
            }
            replace(&dir, &path, &meta, &new).map_err(|e| format!("{shown}: not written: {e}"))?;
            Ok(("switched", what))
        }
    }
}

/// The file's text, at most [`MAX_CONFIG_BYTES`], not opened through a symlink.
fn read_capped(path: &Path) -> Result<String, String> {
    // O_NONBLOCK: a FIFO planted in the tree must not hang the command
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    if !f.metadata().map_err(|e| e.to_string())?.is_file() {
        return Err("not a regular file".into());
    }
    let mut buf = Vec::new();
    f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut buf).map_err(|e| e.to_string())?;
    if buf.len() as u64 > MAX_CONFIG_BYTES {
        return Err(format!("over {MAX_CONFIG_BYTES} bytes"));
    }
    String::from_utf8(buf).map_err(|_| "not UTF-8".to_string())
}

/// Writes `text` to a new file beside `path` with its mode and owner, then renames it over `path`.
fn replace(dir: &Path, path: &Path, meta: &fs::Metadata, text: &str) -> std::io::Result<()> {
    let tmp = dir.join(format!(".config.bm2ironic-{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f: File = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(meta.mode() & 0o7777)
            .open(&tmp)?;
        // Juno's conductor (its own user) rewrites this file at its next takeover
        std::os::unix::fs::fchown(&f, Some(meta.uid()), Some(meta.gid()))?;
        f.set_permissions(fs::Permissions::from_mode(meta.mode() & 0o7777))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    };
    let r = write();
    if r.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = "bbbbbbbb-0000-4000-8000-000000000003";
    const ROOT: &str = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
    const JUNO: &str =
        "default deploy\n\nlabel deploy\nkernel d\n\nlabel boot\nkernel k\nappend initrd=r root={{ ROOT }} ro text \n";

    fn tree(config: Option<&[u8]>) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir(t.path().join(NODE)).unwrap();
        if let Some(c) = config {
            fs::write(t.path().join(NODE).join("config"), c).unwrap();
        }
        t
    }

    #[test]
    fn switches_in_place_keeping_the_mode_and_only_with_apply() {
        let t = tree(Some(JUNO.as_bytes()));
        let cfg = t.path().join(NODE).join("config");
        fs::set_permissions(&cfg, fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(one(t.path(), NODE, ROOT, false).unwrap().0, "would switch");
        assert_eq!(fs::read_to_string(&cfg).unwrap(), JUNO);
        assert_eq!(one(t.path(), NODE, ROOT, true).unwrap().0, "switched");
        let new = fs::read_to_string(&cfg).unwrap();
        assert!(new.starts_with("default boot\n") && new.contains(&format!("root=UUID={ROOT} ro")), "{new}");
        assert_eq!(fs::metadata(&cfg).unwrap().mode() & 0o7777, 0o640);
        assert_eq!(fs::read_dir(t.path().join(NODE)).unwrap().count(), 1, "no temporary file left");
        assert_eq!(one(t.path(), NODE, ROOT, true).unwrap().0, "boot");
        assert_eq!(fs::read_to_string(&cfg).unwrap(), new);
    }

    #[test]
    fn hostile_files_are_named_and_left_alone() {
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("config");
        fs::write(&target, JUNO).unwrap();
        // the config a symlink out of the tree
        let t = tree(None);
        std::os::unix::fs::symlink(&target, t.path().join(NODE).join("config")).unwrap();
        assert!(one(t.path(), NODE, ROOT, true).unwrap_err().contains("a symlink, not followed"));
        // the node's directory a symlink
        let t2 = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), t2.path().join(NODE)).unwrap();
        assert!(one(t2.path(), NODE, ROOT, true).unwrap_err().contains("a symlink, not followed"));
        assert_eq!(fs::read_to_string(&target).unwrap(), JUNO, "nothing outside the tree written");
        // 10 MB, missing, not Juno's form, not UTF-8, an escape sequence
        let mut big = JUNO.as_bytes().to_vec();
        big.resize(10 << 20, b' ');
        for (config, why) in [
            (Some(big.as_slice()), "over 65536 bytes"),
            (None, "missing"),
            (Some(b"default local\nlabel boot\n".as_slice()), "not Juno's form"),
            (Some(b"default deploy\n\xff\n".as_slice()), "not UTF-8"),
            (Some(JUNO.replace("text", "\x1b[2J").as_bytes()), "control character on line 8"),
        ] {
            let t = tree(config);
            let e = one(t.path(), NODE, ROOT, true).unwrap_err();
            assert!(e.contains(why) && !e.contains('\x1b'), "{why}: {e}");
            if let Some(c) = config {
                assert_eq!(fs::read(t.path().join(NODE).join("config")).unwrap(), c, "{why}: untouched");
            }
        }
    }
}
