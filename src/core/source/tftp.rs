//! The copies of nova baremetal's TFTP trees (`--tftp-root`, nova.conf `[baremetal] tftp_root`),
//! read safely: for each instance node, `<root>/<instance uuid>/config` (parsed by `pxe.rs`) and the
//! `kernel` / `ramdisk` beside it. Never followed out of the tree (a symlink whose target leaves the
//! root's canonical path is named), never read whole when it is too big (`MAX_CONFIG`), never
//! guessed on. The result, `BootFacts`, is plain data that the pure plan reads through its options.
//! Each instance's directory is listed once (`Listing`): the entries' types say which file is a
//! symlink without an `lstat` of each. See docs/mapping.md, "The next boot", and
//! docs/performance.md for what a cold tree costs.

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
        let inst_dir = dir.join(inst);
        let config = inst_dir.join("config");
        let canon = match canon {
            Ok(c) => c,
            Err(reason) => {
                looked.push(format!("{} ({reason})", shown(&root.dir)));
                continue;
            }
        };
        let found = match Listing::of(&inst_dir) {
            Some(listing) => listing.read(&inst_dir, canon),
            None => read_by_paths(&inst_dir, canon),
        };
        match found {
            Some(found) => {
                return found.map(|(boot, kernel, ramdisk)| PxeFound {
                    boot,
                    host: root.host.clone(),
                    kernel,
                    ramdisk,
                    config,
                })
            }
            None => looked.push(shown(&config)),
        }
    }
    Err(BootProblem::Missing { looked })
}

/// What one tree says of an instance: None when it holds no `config` for it; else the config
/// parsed and the `file://` URLs of the kernel and ramdisk beside it.
type InTree = Option<Result<(PxeBoot, Option<String>, Option<String>), BootProblem>>;

/// An instance's directory, opened (never through a symlink) and listed once. The entries' types
/// come from the directory itself (`d_type`): a file in it that is no symlink is known to be
/// inside the tree without an `lstat`, and the kernel's and ramdisk's inodes are never read. On a
/// cold cache that was half of the path lookups an instance cost.
struct Listing {
    dir: rustix::fs::Dir,
    config: Option<rustix::fs::FileType>,
    kernel: Option<rustix::fs::FileType>,
    ramdisk: Option<rustix::fs::FileType>,
}

impl Listing {
    /// None when `inst_dir` is absent, a symlink, not a directory, or cannot be listed: then its
    /// paths are looked at one by one (`read_by_paths`), which names each case.
    fn of(inst_dir: &Path) -> Option<Listing> {
        use rustix::fs::{openat, Dir, Mode, OFlags, CWD};
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = openat(CWD, inst_dir, flags, Mode::empty()).ok()?;
        let mut l = Listing { dir: Dir::new(fd).ok()?, config: None, kernel: None, ramdisk: None };
        while l.config.is_none() || l.kernel.is_none() || l.ramdisk.is_none() {
            let Some(entry) = l.dir.read() else { break };
            let entry = entry.ok()?;
            let slot = match entry.file_name().to_bytes() {
                b"config" => &mut l.config,
                b"kernel" => &mut l.kernel,
                b"ramdisk" => &mut l.ramdisk,
                _ => continue,
            };
            *slot = Some(entry.file_type());
        }
        Some(l)
    }

    fn read(&self, inst_dir: &Path, canon: &Path) -> InTree {
        use rustix::fs::FileType;
        let config = inst_dir.join("config");
        let text = match self.config? {
            // the type unknown to the file system's directory: resolved as a symlink would be
            FileType::Symlink | FileType::Unknown => read_config(&config, canon, false),
            _ => self.read_config(&config, canon),
        };
        let text = match text {
            Ok(t) => t,
            Err(p) => return Some(Err(p)),
        };
        let beside = |name: &str, t: Option<FileType>| {
            let path = inst_dir.join(name);
            match t {
                None => Ok(None),
                Some(FileType::RegularFile) => file_url(&path).map(Some),
                Some(FileType::Symlink | FileType::Unknown) => beside_file(&path, canon, true),
                Some(_) => Err(BootProblem::NotFile { path: shown(&path) }),
            }
        };
        Some(
            parsed(&config, &text)
                .and_then(|boot| Ok((boot, beside("kernel", self.kernel)?, beside("ramdisk", self.ramdisk)?))),
        )
    }

    /// `config`, opened in the listed directory without following a symlink (one swapped in since
    /// the listing is resolved and checked like any other).
    fn read_config(&self, config: &Path, canon: &Path) -> Result<String, BootProblem> {
        use rustix::fs::{openat, Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match self.dir.fd().and_then(|d| openat(d, "config", flags, Mode::empty())) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::LOOP) => return read_config(config, canon, false),
            Err(e) => {
                return Err(BootProblem::Unreadable {
                    path: shown(config),
                    reason: std::io::Error::from(e).to_string(),
                })
            }
        };
        let bytes = crate::core::settings::file::read_open(std::fs::File::from(fd), MAX_CONFIG)
            .map_err(|e| config_problem(config, e))?;
        String::from_utf8(bytes).map_err(|_| BootProblem::NotUtf8 { path: shown(config) })
    }
}

/// The config, parsed.
fn parsed(config: &Path, text: &str) -> Result<PxeBoot, BootProblem> {
    pxe::parse(text).map_err(|problem| BootProblem::Parse { path: shown(config), problem })
}

/// `read_instance`'s way for a directory that could not be listed: each path looked at in turn.
fn read_by_paths(inst_dir: &Path, canon: &Path) -> InTree {
    let config = inst_dir.join("config");
    // present at all (a dangling symlink counts as present: it is named below)
    let meta = std::fs::symlink_metadata(&config).ok()?;
    // the instance's directory a real one (not a symlink): then a file in it that is no symlink
    // either is inside the tree without resolving its path (see `inside`)
    let dir_plain = std::fs::symlink_metadata(inst_dir).is_ok_and(|m| m.is_dir());
    let found = read_config(&config, canon, dir_plain && !meta.is_symlink()).and_then(|text| {
        let boot = parsed(&config, &text)?;
        let beside = |name: &str| beside_file(&inst_dir.join(name), canon, dir_plain);
        Ok((boot, beside("kernel")?, beside("ramdisk")?))
    });
    Some(found)
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
    let bytes = crate::core::settings::file::read_bytes(&real, MAX_CONFIG).map_err(|e| config_problem(path, e))?;
    String::from_utf8(bytes).map_err(|_| BootProblem::NotUtf8 { path: shown(path) })
}

/// Why the config at `path` was not read.
fn config_problem(path: &Path, e: FileProblem) -> BootProblem {
    match e {
        FileProblem::NotRegular(_) => BootProblem::NotFile { path: shown(path) },
        FileProblem::TooBig { bytes, .. } => BootProblem::TooBig { path: shown(path), bytes },
        other => BootProblem::Unreadable { path: shown(path), reason: other.to_string() },
    }
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
    file_url(path).map(Some)
}

/// `file://<path>` of a regular file inside the tree; a path that Ironic's image cache would take
/// differently than it is written is named.
fn file_url(path: &Path) -> Result<String, BootProblem> {
    let text = path.to_str().ok_or_else(|| BootProblem::NotUtf8 { path: shown(path) })?;
    if text.chars().any(char::is_control) || text.contains(' ') {
        // a path Ironic's image cache would take differently than it is written: named
        return Err(BootProblem::Unreadable {
            path: shown(path),
            reason: "control characters or spaces in its path".into(),
        });
    }
    Ok(format!("file://{text}"))
}

#[cfg(test)]
#[path = "tftp_tests.rs"]
mod tests;
