//! A REAL Glance for the Juno tests and Ironic 39's deploys (scripts/glance.sh: PyPI glance==15.0.2
//! on Python 2.7, SQLite and the file store, behind the Keystone of the Juno tests (Keystone 12.0.3,
//! `juno::keystone_v2`): each request's token checked, as Juno's Ironic conductor and Nova send them; its v1 API is what Juno's
//! Ironic and Nova speak), holding the images the Juno tests' clouds name (the deploy kernel and
//! ramdisk, the instances' image and its kernel and ramdisk), uploaded through its own API with those
//! ids, as Keystone's admin.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::env::{repo_file, skip};
use super::juno::{keystone_v2, IMAGE, KERNEL, KERNEL_I, KEYSTONE_V2_PASSWORD, RAMDISK, RAMDISK_I};
use super::ports::port;
use super::process::{wait_port, Guard};

/// Glance's venv (scripts/glance.sh env).
pub const GLANCE_VENV: &str = "BM2IRONIC_TEST_GLANCE_VENV";

/// A running Glance (API and registry), stopped when dropped.
pub struct Glance {
    _registry: Guard,
    _api: Guard,
    /// Its API's port on 127.0.0.1.
    pub port: u16,
    /// Its work dir: the conf files, glance-api.log, glance.sqlite, images/.
    pub dir: PathBuf,
    /// Keystone's admin token the images are uploaded with.
    token: String,
}

fn glance_sh(venv: &Path) -> Command {
    let mut c = Command::new("bash");
    c.arg(repo_file("scripts/glance.sh")).env("BM2_GLANCE_VENV", venv);
    c
}

impl Glance {
    /// `start` with the Juno tests' images from scripts/bootvm.sh's dir `boot`: the deploy kernel
    /// and the instance's kernel its `vmlinuz`, the deploy ramdisk its file `deploy_ramdisk`, the
    /// instance's ramdisk its `initramfs`.
    pub async fn start_juno(boot: &Path, deploy_ramdisk: &str) -> Option<Glance> {
        let served = [
            (KERNEL, boot.join("vmlinuz")),
            (RAMDISK, boot.join(deploy_ramdisk)),
            (KERNEL_I, boot.join("vmlinuz")),
            (RAMDISK_I, boot.join("initramfs")),
        ];
        Glance::start(&served.iter().map(|(i, p)| (*i, p.as_path())).collect::<Vec<_>>()).await
    }

    /// Starts Glance (None after a loud skip without its venv or its Keystone) and uploads the images: each of
    /// `files` (id, file) with the bytes of its file, padded with zeros to whole MiB (Juno reads
    /// `qemu-img info`, whose fractional sizes, "13.5 MiB", it cannot parse; a kernel and a gzip'd
    /// initramfs boot the same with zeros after them), the others 4 KiB of text.
    pub async fn start(files: &[(&str, &Path)]) -> Option<Glance> {
        let Some(venv) = std::env::var_os(GLANCE_VENV).filter(|v| !v.is_empty()).map(PathBuf::from) else {
            skip(&format!("{GLANCE_VENV} is not set: scripts/test.sh installs Glance (scripts/glance.sh env)"));
            return None;
        };
        let keystone = keystone_v2()?;
        let dir = tempfile::tempdir().unwrap().keep();
        let (api, reg) = (port(), port());
        let out = glance_sh(&venv)
            .args(["conf", dir.to_str().unwrap(), &api.to_string(), &reg.to_string()])
            .env("BM2_GLANCE_KEYSTONE", format!("127.0.0.1:{keystone}"))
            .env("BM2_GLANCE_KEYSTONE_PASSWORD", KEYSTONE_V2_PASSWORD)
            .output()
            .unwrap();
        assert!(out.status.success(), "glance.sh conf: {}", String::from_utf8_lossy(&out.stderr));
        let spawn = |what: &str| {
            Guard::spawn(
                glance_sh(&venv)
                    .args([what, dir.to_str().unwrap()])
                    .stdout(Stdio::null())
                    .stderr(std::fs::File::create(dir.join(format!("{what}.stderr"))).unwrap()),
            )
        };
        let registry = spawn("registry");
        let api_process = spawn("api");
        wait_port(reg, "glance-registry").await;
        wait_port(api, "glance-api").await;
        let scope = serde_json::json!({"project": {"name": "admin", "domain": {"id": "default"}}});
        let v3 = format!("http://127.0.0.1:{keystone}/v3");
        let token = super::keystone::token(&v3, "admin", KEYSTONE_V2_PASSWORD, scope).await;
        let g = Glance { _registry: registry, _api: api_process, port: api, dir, token };
        for (id, format, props) in [
            (KERNEL, "aki", vec![]),
            (RAMDISK, "ari", vec![]),
            (KERNEL_I, "aki", vec![]),
            (RAMDISK_I, "ari", vec![]),
            (IMAGE, "ami", vec![("kernel_id", KERNEL_I), ("ramdisk_id", RAMDISK_I)]),
        ] {
            let bytes = match files.iter().find(|(i, _)| *i == id) {
                Some((_, path)) => {
                    let mut b = std::fs::read(path).unwrap();
                    b.resize(b.len().div_ceil(1 << 20) * (1 << 20), 0);
                    b
                }
                None => {
                    let mut b = format!("the bytes of image {id}\n").into_bytes();
                    b.resize(4096, b'.');
                    b
                }
            };
            g.upload(id, format, &props, bytes).await;
        }
        Some(g)
    }

    /// A whole-disk image (`raw`, container `bare`, public) with the bytes of `file`, under `id`, as an
    /// operator uploads one for the cloud's new instances. Glance computes its md5 `checksum`.
    pub async fn upload_disk(&self, id: &str, file: &Path) {
        self.upload_as(id, ("raw", "bare"), &[], std::fs::read(file).unwrap()).await
    }

    /// POST /v1/images: the image `id`, public, active, with `bytes`.
    async fn upload(&self, id: &str, format: &str, props: &[(&str, &str)], bytes: Vec<u8>) {
        self.upload_as(id, (format, format), props, bytes).await
    }

    /// POST /v1/images: the image `id` in (disk format, container format), public, active.
    async fn upload_as(&self, id: &str, (disk, container): (&str, &str), props: &[(&str, &str)], bytes: Vec<u8>) {
        let mut rq = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{}/v1/images", self.port))
            .header("x-image-meta-id", id)
            .header("x-image-meta-name", format!("bm2ironic-test-{id}"))
            .header("x-image-meta-disk_format", disk)
            .header("x-image-meta-container_format", container)
            .header("x-image-meta-is_public", "true")
            .header("X-Auth-Token", &self.token)
            .header("Content-Type", "application/octet-stream");
        for (k, v) in props {
            rq = rq.header(format!("x-image-meta-property-{k}"), *v);
        }
        let r = rq.body(bytes).send().await.unwrap();
        let status = r.status();
        let body = r.text().await.unwrap_or_default();
        assert!(status.is_success() && body.contains("\"active\""), "Glance upload of {id}: {status} {body}");
    }

    /// glance-api's log (a line per request: `GET /v1/images/<id> HTTP/1.1" 200`).
    pub fn api_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("glance-api.log")).unwrap_or_default()
    }
}
