//! ipmitool as Ironic's `ipmi` hardware type runs it (`ironic/drivers/modules/ipmitool.py`):
//! `ipmitool -I lanplus -H ADDRESS -L ADMINISTRATOR -U USER ... power status`, so that what the check
//! finds is what the takeover will meet. The password goes through the environment (`-E`,
//! `IPMI_PASSWORD`), never on the command line (docs/commands.md, "plan --check-bmc"). Only two
//! reads are ever built here: `power status` (Get Chassis Status) and `mc guid` (Get System GUID).

use super::facts::{Failure, Power};

/// What the check asks a BMC: nothing else can be built (no power action exists here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    PowerStatus,
    SystemGuid,
}

impl Read {
    fn words(self) -> [&'static str; 2] {
        match self {
            Read::PowerStatus => ["power", "status"],
            Read::SystemGuid => ["mc", "guid"],
        }
    }
}

/// ipmitool's arguments for `read` of the BMC at `address` as `user` (None: the null user, as
/// nova_bm's driver left `-U` out). `-v` makes ipmitool say why a session failed. `-N 1 -R tries`:
/// a second a try, as many tries as the check's timeout holds (`tries_within`), so that a slow BMC
/// is waited for as long as the operator said, not ipmitool's own few seconds (the timeout still
/// kills it).
pub fn args(address: &str, user: Option<&str>, read: Read, tries: u32) -> Vec<String> {
    let mut a: Vec<String> = ["-v", "-I", "lanplus", "-H", address, "-L", "ADMINISTRATOR"].map(String::from).to_vec();
    if let Some(u) = user.filter(|u| !u.is_empty()) {
        a.extend(["-U".to_string(), u.to_string()]);
    }
    a.extend(["-E".into(), "-R".into(), tries.max(1).to_string(), "-N".into(), "1".into()]);
    a.extend(read.words().map(String::from));
    a
}

/// ipmitool's tries (of a second each) that fit in `timeout`, one second left for the session.
pub fn tries_within(timeout: std::time::Duration) -> u32 {
    (timeout.as_secs().saturating_sub(1)).clamp(1, 60) as u32
}

/// Why a `pm_address` cannot be given to ipmitool at all (Ironic would pass it as it is, and fail).
pub fn unusable_address(address: &str) -> Option<String> {
    let a = address.trim();
    if a.is_empty() {
        return Some("pm_address is blank".into());
    }
    if a.starts_with('-') {
        return Some(format!(
            "pm_address '{}' begins with '-' (ipmitool would read it as an option)",
            a.escape_debug()
        ));
    }
    if let Some(c) = a.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Some(format!("pm_address '{}' holds {:?}: not a host name or address", a.escape_debug(), c));
    }
    None
}

/// The power state in `power status`'s output ("Chassis Power is on").
pub fn parse_power(stdout: &str) -> Option<Power> {
    let line = stdout.lines().find(|l| l.trim_start().starts_with("Chassis Power is"))?;
    match line.trim().rsplit(' ').next()? {
        "on" => Some(Power::On),
        "off" => Some(Power::Off),
        _ => None,
    }
}

/// The GUID in `mc guid`'s output ("System GUID  : 1111...").
pub fn parse_guid(stdout: &str) -> Option<String> {
    let line = stdout.lines().find(|l| l.trim_start().starts_with("System GUID"))?;
    let g = line.split_once(':')?.1.trim();
    (g.len() == 36).then(|| g.to_ascii_lowercase())
}

/// ipmitool's error lines (what `-v` adds about loading registries and cipher choice left out),
/// joined: the exact text an operator can search for.
pub fn error_text(stderr: &str) -> String {
    let noise = ["Loading IANA PEN Registry", "Using best available cipher suite", "Running Get VSO Capabilities"];
    let mut lines: Vec<&str> = Vec::new();
    for l in stderr.lines().map(|l| l.trim().trim_start_matches("> ").trim()) {
        if !l.is_empty() && !noise.iter().any(|n| l.starts_with(n)) && !lines.contains(&l) {
            lines.push(l);
        }
    }
    if lines.is_empty() {
        "ipmitool failed without a word".into()
    } else {
        lines.join("; ")
    }
}

/// What a failed ipmitool's error text says went wrong. The BMC's refusal of the user or password
/// comes first (a refused session also fails its privilege request), then privilege, cipher, and
/// silence.
pub fn classify(error: &str) -> Failure {
    let e = error.to_ascii_lowercase();
    let any = |words: &[&str]| words.iter().any(|w| e.contains(w));
    if any(&[
        "rakp 2 hmac is invalid",
        "unauthorized name",
        "rakp 2 message indicates an error",
        "invalid integrity check",
        "no response from rakp",
    ]) {
        Failure::Credentials
    } else if any(&["privilege level", "insufficient privilege"]) {
        Failure::Privilege
    } else if any(&["cipher suite", "algorithm 0x", "not what we requested"]) {
        Failure::Cipher
    } else if any(&[
        "get auth capabilities error",
        "get channel authentication capabilities",
        "address lookup",
        "no response from remote controller",
        "could not open socket",
        "timed out",
    ]) {
        Failure::NoAnswer
    } else {
        Failure::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_ironic_runs_reads_only_and_holds_no_password() {
        let a = args("10.1.2.3", Some("admin"), Read::PowerStatus, 9).join(" ");
        assert_eq!(a, "-v -I lanplus -H 10.1.2.3 -L ADMINISTRATOR -U admin -E -R 9 -N 1 power status");
        assert!(args("b", None, Read::SystemGuid, 0).join(" ").ends_with("-E -R 1 -N 1 mc guid"));
        assert!(!args("b", Some(""), Read::SystemGuid, 2).contains(&"-U".to_string()));
        use std::time::Duration;
        assert_eq!([3, 10, 1000].map(|s| tries_within(Duration::from_secs(s))), [2, 9, 60]);
    }

    /// ipmitool 1.8.19's own words (captured against pyghmi and from real BMCs' reports).
    #[test]
    fn ipmitool_errors_are_told_apart() {
        let cases = [
            ("Loading IANA PEN Registry...\nUsing best available cipher suite 3\n\n> RAKP 2 HMAC is invalid\nError: Unable to establish IPMI v2 / RMCP+ session", Failure::Credentials),
            ("> Error: no response from RAKP 1 message\nSet Session Privilege Level to ADMINISTRATOR failed\nError: Unable to establish IPMI v2 / RMCP+ session", Failure::Credentials),
            ("RAKP 2 message indicates an error : unauthorized name", Failure::Credentials),
            ("Set Session Privilege Level to ADMINISTRATOR failed: Requested privilege level exceeds limit", Failure::Privilege),
            ("Authentication algorithm 0x01 is not what we requested 0x03\nError: Unable to establish IPMI v2 / RMCP+ session", Failure::Cipher),
            ("Get Auth Capabilities error\nError issuing Get Channel Authentication Capabilities request\nError: Unable to establish IPMI v2 / RMCP+ session", Failure::NoAnswer),
            ("Address lookup for bmc-9 failed\nCould not open socket!", Failure::NoAnswer),
            ("Error: Unable to establish IPMI v2 / RMCP+ session", Failure::Other),
        ];
        for (text, want) in cases {
            assert_eq!(classify(&error_text(text)), want, "{text}");
        }
        assert_eq!(
            error_text("Loading IANA PEN Registry...\n> RAKP 2 HMAC is invalid\nError: Unable to establish IPMI v2 / RMCP+ session"),
            "RAKP 2 HMAC is invalid; Error: Unable to establish IPMI v2 / RMCP+ session"
        );
    }

    #[test]
    fn outputs_and_hostile_addresses() {
        assert_eq!(parse_power("Chassis Power is off\n"), Some(Power::Off));
        assert_eq!(parse_power("Chassis Power is on"), Some(Power::On));
        assert_eq!(parse_power("garbage"), None);
        let guid = "System GUID   : 11111111-2222-3333-4444-55555555555A\nGUID Encoding : SMBIOS\n";
        assert_eq!(parse_guid(guid).as_deref(), Some("11111111-2222-3333-4444-55555555555a"));
        assert_eq!(parse_guid("System GUID : short"), None);
        for bad in ["", "  ", "-oProxyCommand=x", "10.0.0.1 10.0.0.2", "a\u{7}b"] {
            assert!(unusable_address(bad).is_some(), "{bad:?}");
        }
        for ok in ["10.0.0.1", "bmc-1.example", "10.0.0.1:623", "fe80::1"] {
            assert_eq!(unusable_address(ok), None, "{ok}");
        }
    }
}
