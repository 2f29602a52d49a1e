//! nova baremetal's per-instance PXE config (`<[baremetal] tftp_root>/<instance uuid>/config`,
//! nova 2014.2 `nova/virt/baremetal/pxe_config.template`), parsed: pure, no I/O. What it gives is
//! the instance's next boot: the root partition's uuid (`root=UUID=<uuid>` of the `boot` label) and
//! nova baremetal's own extra kernel arguments. Anything else is named, never guessed on: a config
//! still on `default deploy` (the deploy never finished, or Juno Ironic's takeover rewrote it), no
//! `root=`, two `root=`, a root that is not `UUID=<uuid>`, and control characters (an escape
//! sequence) anywhere. CRLF line ends are accepted. See docs/mapping.md, "The next boot".

use std::fmt;

/// The config nova baremetal (2014.2) left for a deployed instance, byte for byte: its template as
/// `build_pxe_config` renders it (jinja2: no final newline; the `boot` label's append line ends with
/// the blank before the empty `pxe_network_config`) with `deployment_id` 1 and key `KEY`, then the
/// deploy helper's `switch_pxe_config` (`default boot`, `root=UUID=<uuid>`); `pxe_append_params` =
/// `extra`. For the demo sandbox, the tests and the rehearsal's fixtures; held to Juno's own
/// functions by tests/it/juno_baremetal.rs.
pub fn nova_baremetal_config(tftp_root: &str, instance_uuid: &str, root_uuid: &str, extra: &str) -> String {
    let d = format!("{tftp_root}/{instance_uuid}");
    format!(
        "default boot\n\nlabel deploy\nkernel {d}/deploy_kernel\nappend initrd={d}/deploy_ramdisk selinux=0 disk=cciss/c0d0,sda,hda,vda iscsi_target_iqn=iqn-{instance_uuid} deployment_id=1 deployment_key=KEY troubleshoot=0 {extra}\nipappend 3\n\n\nlabel boot\nkernel {d}/kernel\nappend initrd={d}/ramdisk root=UUID={root_uuid} ro {extra} "
    )
}

/// What a well-formed config says of the instance's next boot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PxeBoot {
    /// `root=UUID=<uuid>` of the `boot` label, lower-case
    pub root_uuid: String,
    /// the `boot` label's append parameters besides `initrd=`, `root=` and `ro`, in their order
    pub extra_args: Vec<String>,
}

impl PxeBoot {
    /// The kernel command line Ironic's ramdisk deploy gives the instance's kernel:
    /// `root=UUID=<uuid> ro` and nova baremetal's own extra parameters.
    pub fn kernel_arguments(&self) -> String {
        let mut s = format!("root=UUID={} ro", self.root_uuid);
        for a in &self.extra_args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }
}

/// Why a config gives no next boot. Values from the file are kept only in a shown-safe form
/// (`crate::core::text::visible_line`, clipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PxeProblem {
    /// a control character (ESC, a lone CR, DEL, C1, ...) on this line: the file is not read on
    ControlCharacter { line: usize },
    /// `default deploy`: the deploy never finished, or Juno Ironic's takeover rewrote it (LP#1421370)
    DefaultDeploy,
    /// no `default` line, or one naming another label
    DefaultNotBoot { default: Option<String> },
    /// `default` given twice
    TwoDefaults,
    /// no `label boot`, or one without an `append` line
    NoBootLabel,
    /// `label boot` twice, or two `append` lines in it
    TwoBootLabels,
    /// the boot label's append line has no `root=`
    NoRoot,
    /// the boot label's append line has several `root=` (which one the kernel takes is its business)
    TwoRoots { count: usize },
    /// `root=` is not `UUID=<uuid>` (`{{ ROOT }}`: the template never filled in)
    RootNotUuid { value: String },
}

impl fmt::Display for PxeProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PxeProblem::ControlCharacter { line } => {
                write!(f, "a control character (escape sequence) on line {line}: not read")
            }
            PxeProblem::DefaultDeploy => f.write_str(
                "says 'default deploy': the deploy never finished, or Juno Ironic's takeover rewrote it (LP#1421370)",
            ),
            PxeProblem::DefaultNotBoot { default: None } => f.write_str("has no 'default boot' line"),
            PxeProblem::DefaultNotBoot { default: Some(d) } => write!(f, "says 'default {d}', not 'default boot'"),
            PxeProblem::TwoDefaults => f.write_str("has two 'default' lines"),
            PxeProblem::NoBootLabel => f.write_str("has no 'label boot' with an 'append' line"),
            PxeProblem::TwoBootLabels => f.write_str("has two 'label boot' (or two 'append' lines in it)"),
            PxeProblem::NoRoot => f.write_str("has no root= in the boot label's append line"),
            PxeProblem::TwoRoots { count } => write!(f, "has {count} root= in the boot label's append line"),
            PxeProblem::RootNotUuid { value } => write!(f, "root={value} is not root=UUID=<uuid>"),
        }
    }
}

/// At most this much of a value from the file is kept for a message.
const SHOWN: usize = 60;

/// A value from the file, as a message may show it: control characters visible, clipped.
fn shown(s: &str) -> String {
    let v = crate::core::text::visible_line(s);
    if v.chars().count() <= SHOWN {
        return v.into_owned();
    }
    let mut out: String = v.chars().take(SHOWN).collect();
    out.push_str("...");
    out
}

/// Characters a PXE config never holds: C0 controls but tab, DEL, C1 controls, the bidirectional
/// overrides (what `text::visible` would escape).
fn is_control(c: char) -> bool {
    c != '\t' && (c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
}

/// The lines of `text`, CRLF or LF, each checked for control characters (a CR is accepted only
/// right before its LF, or at the very end).
fn lines(text: &str) -> Result<Vec<&str>, PxeProblem> {
    let mut out = Vec::new();
    for (k, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.chars().any(is_control) {
            return Err(PxeProblem::ControlCharacter { line: k + 1 });
        }
        out.push(line);
    }
    Ok(out)
}

/// Parses a config. `default` must be `boot`; the `boot` label's one append line must have exactly
/// one `root=`, in the form `UUID=<uuid>`. Keywords are matched in any case, as pxelinux does.
pub fn parse(text: &str) -> Result<PxeBoot, PxeProblem> {
    let mut default: Option<String> = None;
    let mut label: Option<String> = None;
    let mut boot_labels = 0usize;
    let mut boot_append: Option<&str> = None;
    for line in lines(text)? {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line.split_once([' ', '\t']).map_or((line, ""), |(w, r)| (w, r.trim()));
        match word.to_ascii_lowercase().as_str() {
            "default" => {
                if default.is_some() {
                    return Err(PxeProblem::TwoDefaults);
                }
                default = Some(rest.to_string());
            }
            "label" => {
                label = Some(rest.to_string());
                if rest == "boot" {
                    boot_labels += 1;
                }
            }
            "append" if label.as_deref() == Some("boot") => {
                if boot_append.is_some() {
                    return Err(PxeProblem::TwoBootLabels);
                }
                boot_append = Some(rest);
            }
            _ => {}
        }
    }
    match default.as_deref() {
        Some("boot") => {}
        Some("deploy") => return Err(PxeProblem::DefaultDeploy),
        other => return Err(PxeProblem::DefaultNotBoot { default: other.map(shown) }),
    }
    if boot_labels > 1 {
        return Err(PxeProblem::TwoBootLabels);
    }
    let append = boot_append.ok_or(PxeProblem::NoBootLabel)?;
    let roots: Vec<&str> = append.split_whitespace().filter_map(|t| t.strip_prefix("root=")).collect();
    let root = match roots.as_slice() {
        [] => return Err(PxeProblem::NoRoot),
        [one] => *one,
        more => return Err(PxeProblem::TwoRoots { count: more.len() }),
    };
    let uuid = root
        .strip_prefix("UUID=")
        .and_then(|u| uuid::Uuid::try_parse(u).ok())
        .filter(|_| root.len() == "UUID=".len() + 36)
        .ok_or_else(|| PxeProblem::RootNotUuid { value: shown(root) })?;
    let extra_args = append
        .split_whitespace()
        .filter(|t| !t.starts_with("initrd=") && !t.starts_with("root=") && *t != "ro")
        .map(str::to_string)
        .collect();
    Ok(PxeBoot { root_uuid: uuid.hyphenated().to_string(), extra_args })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "4f0c6e7a-1d2b-4c3d-9e8f-0a1b2c3d4e5f";

    /// nova 2014.2's template, switched to `boot` as the deploy helper leaves it.
    fn config(default: &str, append_extra: &str) -> String {
        format!(
            "default {default}\n\nlabel deploy\nkernel /tftpboot/i/deploy_kernel\nappend initrd=/tftpboot/i/deploy_ramdisk selinux=0 disk=cciss/c0d0,sda,hda,vda iscsi_target_iqn=iqn-i deployment_id=1 deployment_key=K troubleshoot=0 nofb nomodeset vga=normal\nipappend 3\n\n\nlabel boot\nkernel /tftpboot/i/kernel\nappend initrd=/tftpboot/i/ramdisk root=UUID={ROOT} ro nofb nomodeset vga=normal{append_extra}\n"
        )
    }

    #[test]
    fn nova_baremetal_config_gives_root_and_extra_args() {
        let b = parse(&config("boot", "")).unwrap();
        assert_eq!(b.root_uuid, ROOT);
        assert_eq!(b.extra_args, vec!["nofb", "nomodeset", "vga=normal"]);
        assert_eq!(b.kernel_arguments(), format!("root=UUID={ROOT} ro nofb nomodeset vga=normal"));
    }

    #[test]
    fn crlf_line_ends_are_accepted() {
        let crlf = config("boot", "").replace('\n', "\r\n");
        assert_eq!(parse(&crlf).unwrap(), parse(&config("boot", "")).unwrap());
    }

    #[test]
    fn upper_case_uuid_is_lowered() {
        let text = config("boot", "").replace(ROOT, &ROOT.to_ascii_uppercase());
        assert_eq!(parse(&text).unwrap().root_uuid, ROOT);
    }

    #[test]
    fn default_deploy_is_named() {
        assert_eq!(parse(&config("deploy", "")), Err(PxeProblem::DefaultDeploy));
        assert!(PxeProblem::DefaultDeploy.to_string().contains("default deploy"));
    }

    #[test]
    fn other_or_missing_default_is_named() {
        assert_eq!(parse(&config("rescue", "")), Err(PxeProblem::DefaultNotBoot { default: Some("rescue".into()) }));
        let none = config("boot", "").replace("default boot\n", "");
        assert_eq!(parse(&none), Err(PxeProblem::DefaultNotBoot { default: None }));
        let twice = format!("default boot\n{}", config("boot", ""));
        assert_eq!(parse(&twice), Err(PxeProblem::TwoDefaults));
    }

    #[test]
    fn two_roots_are_named_not_chosen() {
        let two = config("boot", " root=/dev/sda1");
        assert_eq!(parse(&two), Err(PxeProblem::TwoRoots { count: 2 }));
    }

    #[test]
    fn no_root_or_a_template_root_is_named() {
        let none = config("boot", "").replace(&format!("root=UUID={ROOT} "), "");
        assert_eq!(parse(&none), Err(PxeProblem::NoRoot));
        let template = config("boot", "").replace(&format!("UUID={ROOT}"), "{{ ROOT }}");
        // `root={{` and then `ROOT` and `}}` as words: one root=, not a uuid
        assert!(matches!(parse(&template), Err(PxeProblem::RootNotUuid { .. })));
        let device = config("boot", "").replace(&format!("UUID={ROOT}"), "/dev/sda1");
        assert_eq!(parse(&device), Err(PxeProblem::RootNotUuid { value: "/dev/sda1".into() }));
        let short = config("boot", "").replace(ROOT, "4f0c6e7a");
        assert!(matches!(parse(&short), Err(PxeProblem::RootNotUuid { .. })));
        // a uuid in another form (braces, no hyphens) is not what nova baremetal wrote
        let braces = config("boot", "").replace(ROOT, &ROOT.replace('-', ""));
        assert!(matches!(parse(&braces), Err(PxeProblem::RootNotUuid { .. })));
    }

    #[test]
    fn escape_sequences_are_named_with_their_line_and_not_kept() {
        let esc = config("boot", " \x1b]0;owned\x07");
        assert_eq!(parse(&esc), Err(PxeProblem::ControlCharacter { line: 11 }));
        let csi = config("boot", "").replace("nofb", "\x1b[2Jnofb");
        assert!(matches!(parse(&csi), Err(PxeProblem::ControlCharacter { .. })));
        let c1 = config("boot", " \u{9b}2J");
        assert!(matches!(parse(&c1), Err(PxeProblem::ControlCharacter { .. })));
        let lone_cr = config("boot", " a\rb");
        assert!(matches!(parse(&lone_cr), Err(PxeProblem::ControlCharacter { .. })));
        let bidi = config("boot", " \u{202e}x");
        assert!(matches!(parse(&bidi), Err(PxeProblem::ControlCharacter { .. })));
        let nul = config("boot", " \0");
        assert!(matches!(parse(&nul), Err(PxeProblem::ControlCharacter { .. })));
    }

    #[test]
    fn a_hostile_default_is_shown_clipped() {
        let long = "x".repeat(10_000);
        let Err(PxeProblem::DefaultNotBoot { default: Some(d) }) = parse(&config(&long, "")) else { panic!() };
        assert!(d.len() < 100, "{d}");
    }

    #[test]
    fn no_boot_label_or_two_are_named() {
        let only_deploy = config("boot", "").split("label boot").next().unwrap().to_string();
        assert_eq!(parse(&only_deploy), Err(PxeProblem::NoBootLabel));
        let twice = format!("{}label boot\nappend root=UUID={ROOT}\n", config("boot", ""));
        assert_eq!(parse(&twice), Err(PxeProblem::TwoBootLabels));
    }

    #[test]
    fn the_deploy_labels_root_is_not_the_instances() {
        // a root= in the deploy label is no concern of the boot
        let text = config("boot", "").replace("troubleshoot=0", "troubleshoot=0 root=/dev/ram0");
        assert_eq!(parse(&text).unwrap().root_uuid, ROOT);
    }
}
