//! API runs kept in the state directory (no Ironic database given): one head file per run,
//! `<run id>.json` (times, status, checksum: rewritten only when the status changes), and one
//! append-only journal of its nodes, `<run id>.nodes.jsonl`: a line per node record, the last line
//! of a node winning. A node's progress is one appended line (bytes written grow with the nodes,
//! not with their square). A run file from before the journal keeps its nodes in the head's
//! `written`; it still reads.
//!
//! Nothing here is trusted for being in the directory: the directory must be ours and not
//! writable by others (made 0700 with a warning when it is ours and was not), files are opened
//! without following a symlink, a head file must be a regular file of ours named by the id it
//! holds, and an unreadable line is named, never skipped in silence. See docs/runs.md.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::error::RecordError;
use super::record::{RunRecord, Unreadable, WrittenNode};

/// A run record is a few MB even at 100,000 nodes; the bound keeps a device or a huge planted file
/// from exhausting memory.
const MAX_RECORD_FILE: u64 = 1 << 30;

fn file_err(path: &Path, e: impl std::fmt::Display) -> RecordError {
    RecordError::File { path: path.display().to_string(), reason: e.to_string() }
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions
    unsafe { libc::geteuid() }
}

/// The state directory, checked before anything in it is read or written: created 0700 when
/// missing; refused when it is not a directory of ours; made 0700 (said in the audit log) when it
/// is ours and others could write to it.
pub fn checked_dir(dir: &Path, create: bool) -> Result<bool, RecordError> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| file_err(dir, e))?;
            return Ok(true);
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(file_err(dir, e)),
    };
    if !meta.is_dir() {
        return Err(file_err(
            dir,
            "the state directory is not a directory (a symlink or a file): give a private directory (--state-dir)",
        ));
    }
    let mode = meta.mode() & 0o777;
    if meta.uid() != euid() {
        return Err(file_err(
            dir,
            format!(
                "the state directory belongs to uid {} (mode {mode:o}), not to this user: run records are trusted only from a directory of your own (--state-dir)",
                meta.uid()
            ),
        ));
    }
    if mode & 0o022 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| file_err(dir, e))?;
        tracing::warn!(dir = %dir.display(), mode = format!("{mode:o}"), "the state directory was writable by others: it is now 0700");
    }
    Ok(true)
}

fn head_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}

fn journal_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.nodes.jsonl"))
}

/// Reads a file of ours: a regular file, never through a symlink, owned by this user.
fn read_ours(path: &Path) -> Result<Option<String>, RecordError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(file_err(path, e)),
        Ok(m) if !m.file_type().is_file() => {
            return Err(file_err(path, "not a regular file (a symlink, a FIFO or a device): remove it"))
        }
        Ok(m) if m.uid() != euid() => {
            return Err(file_err(path, format!("owned by uid {}, not by this user: remove it", m.uid())))
        }
        Ok(_) => {}
    }
    crate::core::settings::file::read_text(path, MAX_RECORD_FILE).map(Some).map_err(|e| file_err(path, e))
}

/// Writes `text` to `path` with mode 0600 through a new temporary file (`O_EXCL`: never an existing
/// name, never through a symlink) and a rename.
fn write_private(path: &Path, text: &str) -> Result<(), RecordError> {
    let tmp = path.with_extension(format!("json.{}.tmp", uuid::Uuid::new_v4().simple()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .map_err(|e| file_err(&tmp, e))?;
    let written = f.write_all(text.as_bytes()).and_then(|_| f.sync_all());
    if let Err(e) = written.and_then(|_| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(file_err(path, e));
    }
    Ok(())
}

/// Writes the run's head (its nodes are in the journal: `written` left out).
pub fn save_head(dir: &Path, run: &RunRecord) -> Result<(), RecordError> {
    checked_dir(dir, true)?;
    let head = RunRecord { written: Vec::new(), unreadable: Vec::new(), ..run.clone() };
    let text = serde_json::to_string_pretty(&head).map_err(|e| file_err(dir, e))?;
    write_private(&head_path(dir, &run.id), &text)
}

/// Appends node records to the run's journal, one line each, and syncs it.
pub fn append_nodes<'a>(
    dir: &Path,
    id: &str,
    nodes: impl IntoIterator<Item = &'a WrittenNode>,
) -> Result<u64, RecordError> {
    let path = journal_path(dir, id);
    let mut text = String::new();
    for w in nodes {
        text.push_str(&serde_json::to_string(w).map_err(|e| file_err(&path, e))?);
        text.push('\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| file_err(&path, e))?;
    let meta = f.metadata().map_err(|e| file_err(&path, e))?;
    if meta.uid() != euid() || !meta.file_type().is_file() {
        return Err(file_err(&path, "not a regular file of this user's: remove it"));
    }
    f.write_all(text.as_bytes()).and_then(|_| f.sync_data()).map_err(|e| file_err(&path, e))?;
    Ok(text.len() as u64)
}

/// Every run head in the directory, newest first (their nodes not read). A `.json` file that is not
/// a head of ours named by its own id is an error naming it: a planted or copied record is never
/// taken for a run.
pub fn heads(dir: &Path) -> Result<Vec<RunRecord>, RecordError> {
    if !checked_dir(dir, false)? {
        return Ok(Vec::new());
    }
    let rd = std::fs::read_dir(dir).map_err(|e| file_err(dir, e))?;
    let mut out: Vec<RunRecord> = Vec::new();
    for e in rd {
        let p = e.map_err(|e| file_err(dir, e))?.path();
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else { continue };
        let Some(stem) = name.strip_suffix(".json") else { continue };
        let Some(text) = read_ours(&p)? else { continue };
        let run: RunRecord = serde_json::from_str(&text).map_err(|e| file_err(&p, e))?;
        if run.id.as_str() != stem {
            return Err(file_err(
                &p,
                format!(
                    "it holds run {:?}, not run {stem:?}: a run file is named by its own id (remove or rename it)",
                    run.id.as_str()
                ),
            ));
        }
        out.push(run);
    }
    out.sort_by(|a, b| b.started_at.cmp(&a.started_at).then(a.id.cmp(&b.id)));
    Ok(out)
}

/// Adds the journal's node records to `run` (read by [`heads`]). A last line without its newline
/// is a write cut short by a kill: only that update is lost (the node's earlier line holds it), and
/// it is said in the audit log; any other line that does not read is named in `unreadable`.
pub fn read_nodes(dir: &Path, run: &mut RunRecord) -> Result<(), RecordError> {
    let path = journal_path(dir, &run.id);
    let Some(text) = read_ours(&path)? else { return Ok(()) };
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    let last = lines.len();
    let mut rows = Vec::with_capacity(last);
    for (i, line) in lines.into_iter().enumerate() {
        if i + 1 == last && !complete {
            tracing::warn!(file = %path.display(), line = i + 1, "a run journal's last line was cut short (a killed run): that update is not read");
            continue;
        }
        rows.push((format!("{} line {}", path.display(), i + 1), line.to_string()));
    }
    run.add_node_records(rows);
    if run.unreadable.len() > 1000 {
        run.unreadable.truncate(1000);
        run.unreadable.push(Unreadable { row: path.display().to_string(), reason: "and more lines".into() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::migrate::run::status::RunStatus;

    fn node(uuid: &str, state: &str) -> WrittenNode {
        serde_json::from_value(serde_json::json!({
            "nova_bm_id": 1, "uuid": uuid, "provision_state": state, "instance_uuid": null, "maintenance": false,
            "driver": "ipmi", "driver_info": {}, "properties": {}, "instance_info": {}, "ports": []
        }))
        .unwrap()
    }

    #[test]
    fn a_node_is_one_line_and_its_last_line_wins() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("state");
        let run = RunRecord::begin(RunStatus::ApiRunning, "c", "s", "modern");
        save_head(&dir, &run).unwrap();
        append_nodes(&dir, &run.id, &[node("a", "enroll"), node("b", "enroll")]).unwrap();
        let grown = append_nodes(&dir, &run.id, &[node("a", "active")]).unwrap();
        assert!(grown < 400, "one node's update is one line: {grown} bytes");
        let mut back = heads(&dir).unwrap().remove(0);
        read_nodes(&dir, &mut back).unwrap();
        let states: Vec<_> = back.written.iter().map(|w| (w.uuid.as_str(), w.provision_state.clone())).collect();
        assert_eq!(states, [("a", Some("active".into())), ("b", Some("enroll".into()))]);
        assert!(back.unreadable.is_empty());
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn a_bad_line_is_named_and_a_cut_last_line_is_only_that_update() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_path_buf();
        let run = RunRecord::begin(RunStatus::ApiRunning, "c", "s", "modern");
        save_head(&dir, &run).unwrap();
        append_nodes(&dir, &run.id, &[node("a", "enroll"), node("b", "enroll")]).unwrap();
        let j = journal_path(&dir, &run.id);
        let mut text = std::fs::read_to_string(&j).unwrap();
        text = text.replacen("\"uuid\":\"b\"", "\"uuid\":", 1);
        text.push_str("{\"nova_bm_id\":1,\"uuid\":\"a\",\"provis");
        std::fs::write(&j, text).unwrap();
        let mut back = heads(&dir).unwrap().remove(0);
        read_nodes(&dir, &mut back).unwrap();
        assert_eq!(back.written.len(), 1);
        assert_eq!(back.unreadable.len(), 1, "{:?}", back.unreadable);
        assert!(back.unreadable[0].row.ends_with("line 2"), "{}", back.unreadable[0]);
    }

    #[test]
    fn a_planted_head_or_a_shared_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_path_buf();
        let run = RunRecord::begin(RunStatus::ApiCommitted, "c", "s", "modern");
        save_head(&dir, &run).unwrap();
        // the same id under another name (a newer start, nothing written): refused, naming the file
        let mut evil = run.clone();
        evil.started_at += chrono::Duration::seconds(60);
        std::fs::write(dir.join("evil.json"), serde_json::to_string(&evil).unwrap()).unwrap();
        let e = heads(&dir).unwrap_err().to_string();
        assert!(e.contains("evil.json") && e.contains("named by its own id"), "{e}");
        std::fs::remove_file(dir.join("evil.json")).unwrap();
        // a symlink in place of a head
        std::os::unix::fs::symlink("/etc/passwd", dir.join("x.json")).unwrap();
        let e = heads(&dir).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        std::fs::remove_file(dir.join("x.json")).unwrap();
        // ours but open to all: made private
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(heads(&dir).unwrap().len(), 1);
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    }
}
