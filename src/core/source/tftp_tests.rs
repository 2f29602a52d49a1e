//! Tests of `tftp.rs`: trees as nova baremetal left them, and as a hostile copy could hold them.

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
fn the_listing_and_the_path_by_path_read_agree() {
    // every case both ways: the listing (a plain directory, types from its entries) must name
    // what `read_by_paths` names, for the config and for the files beside it
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("kernel");
    std::fs::write(&secret, b"k").unwrap();
    type Case = (&'static str, fn(&Path, &Path));
    let cases: [Case; 8] = [
        ("as nova left it", |_, _| {}),
        ("no kernel", |d, _| std::fs::remove_file(d.join("kernel")).unwrap()),
        ("a kernel that is a directory", |d, _| {
            std::fs::remove_file(d.join("kernel")).unwrap();
            std::fs::create_dir(d.join("kernel")).unwrap();
        }),
        ("a ramdisk that leads out", |d, secret| {
            std::fs::remove_file(d.join("ramdisk")).unwrap();
            std::os::unix::fs::symlink(secret, d.join("ramdisk")).unwrap();
        }),
        ("a kernel linked inside the tree", |d, _| {
            std::fs::rename(d.join("kernel"), d.join("vmlinuz")).unwrap();
            std::os::unix::fs::symlink(d.join("vmlinuz"), d.join("kernel")).unwrap();
        }),
        ("no config", |d, _| std::fs::remove_file(d.join("config")).unwrap()),
        ("a config that leads out", |d, secret| {
            std::fs::remove_file(d.join("config")).unwrap();
            std::os::unix::fs::symlink(secret, d.join("config")).unwrap();
        }),
        ("a thousand other entries first", |d, _| {
            for k in 0..1000 {
                std::fs::write(d.join(format!("other-{k}")), b"").unwrap();
            }
        }),
    ];
    for (what, change) in cases {
        let t = tree(true);
        let dir = t.path().join(INST);
        change(&dir, &secret);
        let canon = t.path().canonicalize().unwrap();
        let listed = Listing::of(&dir).expect(what).read(&dir, &canon);
        assert_eq!(listed, read_by_paths(&dir, &canon), "{what}");
        let want_ok = matches!(
            what,
            "as nova left it" | "no kernel" | "a kernel linked inside the tree" | "a thousand other entries first"
        );
        assert_eq!(matches!(listed, Some(Ok(_))), want_ok, "{what}: {listed:?}");
    }
    // a directory that is a symlink is not listed: its paths are resolved one by one
    let t = tree(true);
    let link = t.path().join("link");
    std::os::unix::fs::symlink(t.path().join(INST), &link).unwrap();
    assert!(Listing::of(&link).is_none());
    assert!(Listing::of(&t.path().join("absent")).is_none());
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
                std::fs::write(d.join("config"), pxe::nova_baremetal_config(&root, &inst(i), &root_of(i), "")).unwrap();
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
