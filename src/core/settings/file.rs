//! Reading an operator's file as text, safely: only a regular file (a FIFO would hang the read
//! forever, `/dev/zero` never ends: `--nova-conf /dev/zero` grew to 5 GB before this), at most a
//! bound of bytes, UTF-8. The file is opened without blocking (`O_NONBLOCK`: opening a FIFO waits
//! for a writer otherwise) and checked on the open handle, so a path swapped after a check is
//! still refused. The problem says what the file is, and the bound; callers name the file.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// A config file (nova.conf, ironic.conf, clouds.yaml, a CA bundle) is kilobytes; past this it is
/// not one.
pub const MAX_CONFIG_FILE: u64 = 16 * 1024 * 1024;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileProblem {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a regular file but {0} (only a regular file is read)")]
    NotRegular(&'static str),
    #[error("{bytes} bytes, over the {} bound of this kind of file (not read)", size(*cap))]
    TooBig { bytes: u64, cap: u64 },
    #[error("not UTF-8 text (byte {at} is not)")]
    NotUtf8 { at: usize },
}

/// `n` bytes as the bound is spoken of: "16 MiB", "64 KiB".
pub fn size(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

fn kind(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// The bytes of the regular file at `path` (symlinks followed), at most `cap` of them.
pub fn read_bytes(path: &Path, cap: u64) -> Result<Vec<u8>, FileProblem> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    read_open(file, cap)
}

/// The bytes of a file already opened (without blocking), at most `cap` of them, when the open
/// handle is a regular file.
pub fn read_open(mut file: std::fs::File, cap: u64) -> Result<Vec<u8>, FileProblem> {
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(FileProblem::NotRegular(kind(meta.file_type())));
    }
    if meta.len() > cap {
        return Err(FileProblem::TooBig { bytes: meta.len(), cap });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&mut file).take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        // it grew while read
        return Err(FileProblem::TooBig { bytes: bytes.len() as u64, cap });
    }
    Ok(bytes)
}

/// The text of the regular file at `path`, at most `cap` bytes of UTF-8. A byte order mark is
/// kept: whether the format allows one is the parser's to say.
pub fn read_text(path: &Path, cap: u64) -> Result<String, FileProblem> {
    String::from_utf8(read_bytes(path, cap)?).map_err(|e| FileProblem::NotUtf8 { at: e.utf8_error().valid_up_to() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("nova.conf");
        std::fs::write(&f, "[DEFAULT]\n").unwrap();
        assert_eq!(read_text(&f, MAX_CONFIG_FILE).unwrap(), "[DEFAULT]\n");
        let e = read_text(Path::new("/dev/zero"), MAX_CONFIG_FILE).unwrap_err().to_string();
        assert_eq!(e, "not a regular file but a character device (only a regular file is read)");
        let e = read_text(dir.path(), MAX_CONFIG_FILE).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        // a FIFO with no writer: refused at once, not waited on
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_text(&fifo, MAX_CONFIG_FILE).unwrap_err().to_string();
        assert!(e.contains("a FIFO (named pipe)"), "{e}");
        // over the bound: named with its size, not read (a sparse file: no disk used)
        let big = dir.path().join("big.conf");
        std::fs::File::create(&big).unwrap().set_len(MAX_CONFIG_FILE + 1).unwrap();
        let e = read_text(&big, MAX_CONFIG_FILE).unwrap_err().to_string();
        assert_eq!(e, "16777217 bytes, over the 16 MiB bound of this kind of file (not read)");
        std::fs::write(&f, b"a = \xff\n").unwrap();
        assert_eq!(read_text(&f, 100).unwrap_err().to_string(), "not UTF-8 text (byte 4 is not)");
        assert_eq!(size(64 * 1024), "64 KiB");
        assert_eq!(size(1000), "1000 bytes");
    }
}
