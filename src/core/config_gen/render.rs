//! Writes a whole config file: the existing text line by line, each changed option replaced in
//! place, each removed one (and every line of a dropped section) commented out, new options at the
//! end of their section and new sections at the end. Comments and order are kept.

use std::collections::BTreeSet;

use crate::core::config_gen::model::ConfChange;

fn option_key(trimmed: &str) -> Option<&str> {
    trimmed.split_once(['=', ':']).map(|(k, _)| k.trim())
}

/// `key = value`; a value of several lines continues on indented lines, as oslo.config reads them.
fn option_line(c: &ConfChange) -> Option<String> {
    c.new.as_ref().map(|v| format!("{} = {}\n", c.option, v.written().replace('\n', "\n    ")))
}

/// The new text of a file. `changes` are this file's; `drop_sections` are commented out whole.
pub fn render(original: &str, changes: &[&ConfChange], drop_sections: &[&str], header: &str) -> String {
    let mut out = String::new();
    for l in header.lines() {
        out.push_str(&format!("# {l}\n"));
    }
    out.push('\n');
    let mut done: BTreeSet<(String, String)> = BTreeSet::new();
    // the section's new options, before the blank lines that end it
    let flush = |section: &str, out: &mut String, done: &mut BTreeSet<(String, String)>| {
        let mut adds = String::new();
        for c in changes.iter().filter(|c| c.section == section) {
            if done.insert((c.section.clone(), c.option.clone())) {
                if let Some(l) = option_line(c) {
                    adds.push_str(&l);
                }
            }
        }
        if adds.is_empty() {
            return;
        }
        let mut blanks = 0;
        while out.ends_with("\n\n") {
            out.pop();
            blanks += 1;
        }
        out.push_str(&adds);
        out.push_str(&"\n".repeat(blanks));
    };
    let mut section: Option<String> = None;
    let mut dropped = false;
    let mut commenting = false;
    for raw in original.lines() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            out.push_str(raw);
            out.push('\n');
            continue;
        }
        if raw.starts_with([' ', '\t']) {
            if commenting {
                out.push('#');
            }
            out.push_str(raw);
            out.push('\n');
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
            if let Some(s) = &section {
                flush(s, &mut out, &mut done);
            }
            let name = name.trim().to_string();
            dropped = drop_sections.contains(&name.as_str());
            commenting = false;
            if dropped {
                out.push_str("# bm2ironic config: nova baremetal's section, commented out\n# ");
            }
            out.push_str(raw);
            out.push('\n');
            section = Some(name);
            continue;
        }
        let (Some(s), Some(key)) = (&section, option_key(trimmed)) else {
            out.push_str(raw);
            out.push('\n');
            continue;
        };
        if dropped {
            out.push_str("# ");
            out.push_str(raw);
            out.push('\n');
            commenting = true;
            continue;
        }
        match changes.iter().find(|c| &c.section == s && c.option == key) {
            None => {
                out.push_str(raw);
                out.push('\n');
                commenting = false;
            }
            Some(c) => {
                commenting = true;
                if done.insert((s.clone(), key.to_string())) {
                    match option_line(c) {
                        Some(l) => out.push_str(&l),
                        None => {
                            out.push_str("# ");
                            out.push_str(raw);
                            out.push('\n');
                        }
                    }
                } else {
                    // a later duplicate (oslo.config would let it win): commented out
                    out.push_str("# ");
                    out.push_str(raw);
                    out.push('\n');
                }
            }
        }
    }
    if let Some(s) = &section {
        flush(s, &mut out, &mut done);
    }
    let mut new_sections: Vec<&str> = Vec::new();
    let mut ordered: Vec<&&ConfChange> = changes.iter().collect();
    ordered.sort_by_key(|c| c.section != "DEFAULT");
    for c in ordered {
        if c.new.is_some()
            && !done.contains(&(c.section.clone(), c.option.clone()))
            && !new_sections.contains(&c.section.as_str())
        {
            new_sections.push(&c.section);
        }
    }
    for s in new_sections {
        out.push_str(&format!("\n[{s}]\n"));
        flush(s, &mut out, &mut done);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::config_gen::model::{ConfFile, ConfValue};

    fn ch(section: &str, option: &str, new: Option<&str>) -> ConfChange {
        ConfChange {
            file: ConfFile::Nova,
            section: section.into(),
            option: option.into(),
            old: None,
            new: new.map(ConfValue::plain),
            why: String::new(),
        }
    }

    #[test]
    fn replaces_comments_out_and_appends() {
        let orig = "# top\n[DEFAULT]\nhost = a\ncompute_driver=baremetal.BareMetalDriver\n  continued\nkeep = 1\nhost = dup\n\n[baremetal]\nsql_connection = x\n  more\n[z]\nq = 1\n";
        let cs = [
            ch("DEFAULT", "compute_driver", Some("nova.virt.ironic.IronicDriver")),
            ch("DEFAULT", "host", Some("new")),
            ch("DEFAULT", "ram_allocation_ratio", Some("1.0")),
            ch("z", "q", None),
            ch("ironic", "api_endpoint", Some("http://i/v1")),
        ];
        let refs: Vec<&ConfChange> = cs.iter().collect();
        let out = render(orig, &refs, &["baremetal"], "written by a test");
        let want = "# written by a test\n\n# top\n[DEFAULT]\nhost = new\ncompute_driver = nova.virt.ironic.IronicDriver\n#  continued\nkeep = 1\n# host = dup\nram_allocation_ratio = 1.0\n\n# bm2ironic config: nova baremetal's section, commented out\n# [baremetal]\n# sql_connection = x\n#  more\n[z]\n# q = 1\n\n[ironic]\napi_endpoint = http://i/v1\n";
        assert_eq!(out, want);
    }
}
