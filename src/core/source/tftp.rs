//! The copies of nova baremetal's TFTP trees (`--tftp-root`, nova.conf `[baremetal] tftp_root`),
//! read safely: for each instance node, `<root>/<instance uuid>/config` (parsed by `pxe.rs`) and the
//! `kernel` / `ramdisk` beside it. Never followed out of the tree (a symlink whose target leaves the
//! root's canonical path is named), never read whole when it is too big (`MAX_CONFIG`), never
//! guessed on. The result, `BootFacts`, is plain data that the pure plan reads through its options.
//! See docs/mapping.md, "The next boot".

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use super::model::Inventory;
use super::pxe::{self, PxeBoot, PxeProblem};
use crate::core::settings::file::FileProblem;

/// A PXE config is a few hundred bytes; past this it is not one (a 10 MB file is named, not read).
pub const MAX_CONFIG: u64 = 64 * 1024;

/// One copy of a compute host's TFTP tree: `HOST=DIR` (the nodes of that nova-compute host), or a
/// bare `DIR` (every host's).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TftpRoot {
    pub host: Option<String>,
    pub dir: PathBuf,
}

impl TftpRoot {
    /// `HOST=DIR` or `DIR`. A value with `=` whose left side is blank is refused, as is a blank DIR.
    pub fn parse(s: &str) -> Result<TftpRoot, String> {
        let t = s.trim();
        if t.is_empty() {
            return Err("--tftp-root is empty (an unset shell variable?): give DIR or HOST=DIR".into());
        }
        // a path can hold '=', a host cannot hold '/': HOST=DIR only when the left side has no '/'
        match t.split_once('=') {
            Some((h, d)) if !h.contains('/') => {
                if h.trim().is_empty() || d.trim().is_empty() {
                    return Err(format!(
                        "--tftp-root {}: the host and the directory must both be given (HOST=DIR)",
                        crate::core::text::visible_line(t)
                    ));
                }
                Ok(TftpRoot { host: Some(h.trim().to_string()), dir: PathBuf::from(d.trim()) })
            }
            _ => Ok(TftpRoot { host: None, dir: PathBuf::from(t) }),
        }
    }
}

/// An instance's config found and well-formed, with what lies beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PxeFound {
    pub boot: PxeBoot,
    /// the config read (absolute, as given: not through its symlinks)
    pub config: PathBuf,
    /// the compute host its tree came from (`HOST=DIR`), when named
    pub host: Option<String>,
    /// `file://` of the `kernel` / `ramdisk` beside the config, when there
    pub kernel: Option<String>,
    pub ramdisk: Option<String>,
}

/// Why an instance's boot cannot be read from the trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootProblem {
    /// no tree given at all
    NoTree,
    /// no tree that applies to this node's host holds `<uuid>/config`
    Missing {
        looked: Vec<String>,
    },
    Unreadable {
        path: String,
        reason: String,
    },
    /// a symlink (the config, its directory, or a file beside it) leads out of the tree
    OutOfTree {
        path: String,
    },
    TooBig {
        path: String,
        bytes: u64,
    },
    NotFile {
        path: String,
    },
    NotUtf8 {
        path: String,
    },
    Parse {
        path: String,
        problem: PxeProblem,
    },
}

impl fmt::Display for BootProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BootProblem::NoTree => f.write_str(
                "no TFTP tree given: copy each compute host's [baremetal] tftp_root and give --tftp-root HOST=DIR",
            ),
            BootProblem::Missing { looked } => write!(f, "no PXE config: {} missing", looked.join(", ")),
            BootProblem::Unreadable { path, reason } => write!(f, "{path} cannot be read: {reason}"),
            BootProblem::OutOfTree { path } => {
                write!(f, "{path} is a symlink leading out of the TFTP tree: not followed")
            }
            BootProblem::TooBig { path, bytes } => {
                write!(f, "{path} is {bytes} bytes, over {} KiB: not a PXE config, not read", MAX_CONFIG / 1024)
            }
            BootProblem::NotFile { path } => write!(f, "{path} is not a regular file"),
            BootProblem::NotUtf8 { path } => write!(f, "{path} is not text (not UTF-8)"),
            BootProblem::Parse { path, problem } => write!(f, "{path} {problem}"),
        }
    }
}

/// What the trees say of each instance, by instance uuid (lower-case, hyphenated).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BootFacts {
    /// false when no tree was given (every instance is `NoTree`)
    pub given: bool,
    pub by_instance: HashMap<String, Result<PxeFound, BootProblem>>,
}

impl BootFacts {
    /// What is known of an instance's boot.
    pub fn get(&self, instance_uuid: &str) -> Result<&PxeFound, BootProblem> {
        if !self.given {
            return Err(BootProblem::NoTree);
        }
        match self.by_instance.get(instance_uuid) {
            Some(Ok(f)) => Ok(f),
            Some(Err(p)) => Err(p.clone()),
            None => Err(BootProblem::Missing { looked: vec![] }),
        }
    }
}

/// A path for a message: control characters visible.
fn shown(p: &Path) -> String {
    crate::core::text::visible_line(&p.display().to_string()).into_owned()
}

/// Threads reading the trees: the work is one small file and a few `lstat`s per instance, bound by
/// the disk when it is cold (25,000 instances read one after the other took 3.3 s on a cold cache),
/// so many requests in flight rather than one per core (16 threads: 0.80 s; 64: 0.66 s; 128: no less).
const READERS: usize = 64;
/// Below this many instances one thread reads them all.
const READ_ALONE: usize = 256;

/// Reads every live instance node's config from the trees that apply to its host.
pub fn learn(inv: &Inventory, roots: &[TftpRoot]) -> BootFacts {
    let mut facts = BootFacts { given: !roots.is_empty(), by_instance: HashMap::new() };
    if roots.is_empty() {
        return facts;
    }
    // each root's canonical form, once (a root that cannot be resolved names itself per instance)
    let canon: Vec<(&TftpRoot, Result<PathBuf, String>)> =
        roots.iter().map(|r| (r, r.dir.canonicalize().map_err(|e| e.to_string()))).collect();
    // each instance once, with the host whose trees apply to it (the first node that names it)
    let mut seen = std::collections::HashSet::new();
    let work: Vec<(String, Option<&str>)> = inv
        .nodes
        .iter()
        .filter(|e| !e.node.deleted)
        .filter_map(|e| {
            let inst = e.node.instance_uuid.as_deref().and_then(|u| uuid::Uuid::try_parse(u.trim()).ok())?;
            let inst = inst.hyphenated().to_string();
            seen.insert(inst.clone()).then_some((inst, e.node.service_host.as_deref()))
        })
        .collect();
    let read = |(inst, host): &(String, Option<&str>)| {
        let applies = canon.iter().filter(|(r, _)| r.host.is_none() || r.host.as_deref() == *host);
        read_instance(inst, applies)
    };
    let found: Vec<Result<PxeFound, BootProblem>> =
        if work.len() < READ_ALONE { work.iter().map(read).collect() } else { read_in_parallel(&work, READERS, read) };
    facts.by_instance = work.into_iter().map(|(inst, _)| inst).zip(found).collect();
    tracing::info!(instances = facts.by_instance.len(), roots = roots.len(), "read the TFTP trees");
    facts
}

/// `f` over `items` on `threads` threads, the results in the items' order.
fn read_in_parallel<T: Sync, R: Send>(items: &[T], threads: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, R)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.min(items.len()).max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut got = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { return got };
                        got.push((i, f(item)));
                    }
                })
            })
            .collect();
        // a reader that panicked is resumed here: its results missing, the zip in `learn` would give
        // instances each other's boots
        workers.into_iter().map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    let mut all: Vec<(usize, R)> = parts.iter_mut().flat_map(std::mem::take).collect();
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// The first tree (of those that apply) holding `<inst>/config`, read and parsed.
fn read_instance<'a>(
    inst: &str,
    roots: impl Iterator<Item = &'a (&'a TftpRoot, Result<PathBuf, String>)>,
) -> Result<PxeFound, BootProblem> {
    let mut looked = Vec::new();
    for (root, canon) in roots {
        let dir = std::path::absolute(&root.dir).unwrap_or_else(|_| root.dir.clone());
        let config = dir.join(inst).join("config");
        let canon = match canon {
            Ok(c) => c,
            Err(reason) => {
                looked.push(format!("{} ({reason})", shown(&root.dir)));
                continue;
            }
        };
        // present at all (a dangling symlink counts as present: it is named below)
        let Ok(meta) = std::fs::symlink_metadata(&config) else {
            looked.push(shown(&config));
            continue;
        };
        // the instance's directory a real one (not a symlink): then a file in it that is no symlink
        // either is inside the tree without resolving its path (see `inside`)
        let dir_plain = std::fs::symlink_metadata(dir.join(inst)).is_ok_and(|m| m.is_dir());
        let text = read_config(&config, canon, dir_plain && !meta.is_symlink())?;
        let boot = pxe::parse(&text).map_err(|problem| BootProblem::Parse { path: shown(&config), problem })?;
        let beside = |name: &str| beside_file(&dir.join(inst).join(name), canon, dir_plain);
        return Ok(PxeFound {
            boot,
            host: root.host.clone(),
            kernel: beside("kernel")?,
            ramdisk: beside("ramdisk")?,
            config,
        });
    }
    Err(BootProblem::Missing { looked })
}

/// `path` (`<root>/<instance>/<name>`), inside the tree: as it is when `plain` (neither the
/// instance's directory nor the file is a symlink: then it cannot leave the root, and is not
/// resolved, a `realpath` being a dozen system calls 25,000 times); else resolved through its
/// symlinks, and refused when that leaves `canon_root`.
fn inside(path: &Path, canon_root: &Path, plain: bool) -> Result<PathBuf, BootProblem> {
    if plain {
        return Ok(path.to_path_buf());
    }
    let real = path.canonicalize().map_err(|e| match e.kind() {
        // a dangling symlink: where it leads cannot be checked, so it is not followed
        std::io::ErrorKind::NotFound => BootProblem::OutOfTree { path: shown(path) },
        _ => BootProblem::Unreadable { path: shown(path), reason: e.to_string() },
    })?;
    if !real.starts_with(canon_root) {
        return Err(BootProblem::OutOfTree { path: shown(path) });
    }
    Ok(real)
}

/// The config's text: inside the tree, a regular file, at most `MAX_CONFIG` bytes, UTF-8.
fn read_config(path: &Path, canon_root: &Path, plain: bool) -> Result<String, BootProblem> {
    let real = inside(path, canon_root, plain)?;
    // opened without blocking: a FIFO in the tree is named, not waited on
    let bytes = crate::core::settings::file::read_bytes(&real, MAX_CONFIG).map_err(|e| match e {
        FileProblem::NotRegular(_) => BootProblem::NotFile { path: shown(path) },
        FileProblem::TooBig { bytes, .. } => BootProblem::TooBig { path: shown(path), bytes },
        other => BootProblem::Unreadable { path: shown(path), reason: other.to_string() },
    })?;
    String::from_utf8(bytes).map_err(|_| BootProblem::NotUtf8 { path: shown(path) })
}

/// `file://<path>` of a file beside the config: None when absent, named when it leaves the tree
/// or is not a regular file.
fn beside_file(path: &Path, canon_root: &Path, dir_plain: bool) -> Result<Option<String>, BootProblem> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(None);
    };
    let plain = dir_plain && !meta.is_symlink();
    let real = inside(path, canon_root, plain)?;
    let is_file = if plain { meta.is_file() } else { std::fs::metadata(&real).map(|m| m.is_file()).unwrap_or(false) };
    if !is_file {
        return Err(BootProblem::NotFile { path: shown(path) });
    }
    let text = path.to_str().ok_or_else(|| BootProblem::NotUtf8 { path: shown(path) })?;
    if text.chars().any(char::is_control) || text.contains(' ') {
        // a path Ironic's image cache would take differently than it is written: named
        return Err(BootProblem::Unreadable {
            path: shown(path),
            reason: "control characters or spaces in its path".into(),
        });
    }
    Ok(Some(format!("file://{text}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::core::source::model::{BmNode, InventoryNode};

    const INST: &str = "11111111-2222-4333-8444-555555555555";
    const ROOT: &str = "4f0c6e7a-1d2b-4c3d-9e8f-0a1b2c3d4e5f";

    fn inventory(host: &str) -> Inventory {
        let node = BmNode {
            id: 1,
            instance_uuid: Some(INST.to_ascii_uppercase()),
            service_host: Some(host.into()),
            ..Default::default()
        };
        Inventory { nodes: vec![InventoryNode { node, interfaces: vec![] }], orphan_interfaces: vec![] }
    }

    /// A tree with the instance's config (and kernel, ramdisk), as nova baremetal left it.
    fn tree(files: bool) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join(INST);
        std::fs::create_dir(&d).unwrap();
        let root = t.path().to_str().unwrap();
        std::fs::write(d.join("config"), pxe::nova_baremetal_config(root, INST, ROOT, "nofb")).unwrap();
        if files {
            std::fs::write(d.join("kernel"), b"k").unwrap();
            std::fs::write(d.join("ramdisk"), b"r").unwrap();
        }
        t
    }

    fn learn_one(roots: &[TftpRoot]) -> Result<PxeFound, BootProblem> {
        learn(&inventory("c1"), roots).get(INST).cloned()
    }

    fn bare(t: &tempfile::TempDir) -> TftpRoot {
        TftpRoot { host: None, dir: t.path().into() }
    }

    #[test]
    fn a_config_and_its_files_are_learned() {
        let t = tree(true);
        let f = learn_one(&[bare(&t)]).unwrap();
        assert_eq!(f.boot.root_uuid, ROOT);
        assert_eq!(f.kernel.unwrap(), format!("file://{}/{INST}/kernel", t.path().display()));
        assert_eq!(f.ramdisk.unwrap(), format!("file://{}/{INST}/ramdisk", t.path().display()));
        let no_files = tree(false);
        let f = learn_one(&[bare(&no_files)]).unwrap();
        assert_eq!((f.kernel, f.ramdisk), (None, None));
    }

    #[test]
    fn no_tree_and_missing_are_named() {
        assert_eq!(learn_one(&[]), Err(BootProblem::NoTree));
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(learn_one(&[bare(&empty)]), Err(BootProblem::Missing { .. })));
    }

    #[test]
    fn a_host_tree_applies_to_its_hosts_nodes_only() {
        let t = tree(true);
        let other = TftpRoot { host: Some("c2".into()), dir: t.path().into() };
        assert!(matches!(learn_one(&[other]), Err(BootProblem::Missing { .. })));
        let own = TftpRoot { host: Some("c1".into()), dir: t.path().into() };
        assert_eq!(learn_one(&[own]).unwrap().host.as_deref(), Some("c1"));
    }

    #[test]
    fn a_symlink_out_of_the_tree_is_not_followed() {
        let t = tree(false);
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("config");
        std::fs::write(&secret, pxe::nova_baremetal_config("/x", INST, ROOT, "")).unwrap();
        let config = t.path().join(INST).join("config");
        std::fs::remove_file(&config).unwrap();
        std::os::unix::fs::symlink(&secret, &config).unwrap();
        assert!(matches!(learn_one(&[bare(&t)]), Err(BootProblem::OutOfTree { .. })));
        // the instance's whole directory a link out
        let t2 = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), t2.path().join(INST)).unwrap();
        assert!(matches!(learn_one(&[bare(&t2)]), Err(BootProblem::OutOfTree { .. })));
        // a kernel beside the config that leads out
        let t3 = tree(false);
        std::os::unix::fs::symlink(&secret, t3.path().join(INST).join("kernel")).unwrap();
        assert!(matches!(learn_one(&[bare(&t3)]), Err(BootProblem::OutOfTree { .. })));
        // a dangling link is not followed either
        let t4 = tree(false);
        let c4 = t4.path().join(INST).join("config");
        std::fs::remove_file(&c4).unwrap();
        std::os::unix::fs::symlink("/nonexistent/config", &c4).unwrap();
        assert!(matches!(learn_one(&[bare(&t4)]), Err(BootProblem::OutOfTree { .. })));
        // a link inside the tree is fine
        let t5 = tree(false);
        let c5 = t5.path().join(INST).join("config");
        std::fs::rename(&c5, t5.path().join("real-config")).unwrap();
        std::os::unix::fs::symlink(t5.path().join("real-config"), &c5).unwrap();
        assert!(learn_one(&[bare(&t5)]).is_ok());
    }

    #[test]
    fn a_ten_megabyte_config_is_named_not_read() {
        let t = tree(false);
        let f = std::fs::File::create(t.path().join(INST).join("config")).unwrap();
        f.set_len(10 * 1024 * 1024).unwrap();
        let Err(BootProblem::TooBig { bytes, .. }) = learn_one(&[bare(&t)]) else { panic!() };
        assert_eq!(bytes, 10 * 1024 * 1024);
    }

    #[test]
    fn a_directory_or_binary_config_is_named() {
        let t = tree(false);
        let c = t.path().join(INST).join("config");
        std::fs::remove_file(&c).unwrap();
        std::fs::create_dir(&c).unwrap();
        assert!(matches!(learn_one(&[bare(&t)]), Err(BootProblem::NotFile { .. })));
        // a FIFO with no writer: named at once (File::open waited for a writer forever)
        std::fs::remove_dir(&c).unwrap();
        let path = std::ffi::CString::new(c.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        assert!(matches!(learn_one(&[bare(&t)]), Err(BootProblem::NotFile { .. })));
        let t = tree(false);
        std::fs::write(t.path().join(INST).join("config"), [0xff, 0xfe, 0]).unwrap();
        assert!(matches!(learn_one(&[bare(&t)]), Err(BootProblem::NotUtf8 { .. })));
    }

    #[test]
    fn tftp_root_forms() {
        assert_eq!(TftpRoot::parse("/srv/tftp").unwrap(), TftpRoot { host: None, dir: "/srv/tftp".into() });
        assert_eq!(
            TftpRoot::parse("bm-compute-1=/srv/c1").unwrap(),
            TftpRoot { host: Some("bm-compute-1".into()), dir: "/srv/c1".into() }
        );
        // '=' in a path is a path
        assert_eq!(TftpRoot::parse("/srv/a=b").unwrap().host, None);
        assert!(TftpRoot::parse(" ").is_err());
        assert!(TftpRoot::parse("=/srv").is_err());
        assert!(TftpRoot::parse("host=").is_err());
    }

    #[test]
    fn many_instances_are_read_in_parallel_each_to_its_own_answer() {
        // past READ_ALONE: the threads' results must land on the right instances
        let t = tempfile::tempdir().unwrap();
        let root = t.path().to_str().unwrap().to_string();
        let n = READ_ALONE * 2 + 7;
        let inst = |i: usize| format!("{i:08x}-2222-4333-8444-555555555555");
        let root_of = |i: usize| format!("{i:08x}-1d2b-4c3d-9e8f-0a1b2c3d4e5f");
        let nodes = (0..n)
            .map(|i| {
                if i % 3 != 0 {
                    // every third instance has no config: Missing, not another's
                    let d = t.path().join(inst(i));
                    std::fs::create_dir(&d).unwrap();
                    std::fs::write(d.join("config"), pxe::nova_baremetal_config(&root, &inst(i), &root_of(i), ""))
                        .unwrap();
                }
                let node = BmNode {
                    id: i as i64 + 1,
                    instance_uuid: Some(inst(i)),
                    service_host: Some("c1".into()),
                    ..Default::default()
                };
                InventoryNode { node, interfaces: vec![] }
            })
            .collect();
        let facts =
            learn(&Inventory { nodes, orphan_interfaces: vec![] }, &[TftpRoot { host: None, dir: t.path().into() }]);
        assert_eq!(facts.by_instance.len(), n);
        for i in 0..n {
            match facts.get(&inst(i)) {
                Ok(f) => assert!(i % 3 != 0 && f.boot.root_uuid == root_of(i), "{i}: {f:?}"),
                Err(p) => assert!(i % 3 == 0 && matches!(p, BootProblem::Missing { .. }), "{i}: {p}"),
            }
        }
    }
}
