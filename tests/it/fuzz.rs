//! Bounded fuzzing (proptest) of every parser that reads hostile input: database URLs, oslo config
//! files, MACs, oslo.log lines and their masking, resolutions files, redaction. Each must return an
//! answer or an error for any input, never panic; outputs stay bounded by the input; a password never
//! survives redaction. 1,000 cases per parser per CI run; `PROPTEST_CASES=100000 cargo test --test it
//! fuzz::` runs longer.

use bm2ironic::core::db::url::{redact_url, DbUrl};
use bm2ironic::core::logs::{collapse, oslo};
use bm2ironic::core::migrate::conflict::Resolutions;
use bm2ironic::core::settings::conf_file::{IniFile, NovaConf};
use bm2ironic::core::source::model::normalize_mac;
use bm2ironic::core::text::{visible, visible_line};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000)
}

/// Strings built from the characters that matter to these parsers, plus anything at all.
fn hostile() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("mysql+pymysql://".to_string()),
        Just("postgresql://".to_string()),
        Just("sqlite:///".to_string()),
        Just("@".to_string()),
        Just(":".to_string()),
        Just("/".to_string()),
        Just("?".to_string()),
        Just("&password=".to_string()),
        Just("%".to_string()),
        Just("%zz".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("=".to_string()),
        Just("\n".to_string()),
        Just("[baremetal]\n".to_string()),
        Just("sql_connection = ".to_string()),
        Just("\x1b]0;t\x07".to_string()),
        Just("2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager [req-1 - - - - -] ".to_string()),
        Just("52:54:00:AA:bb:0".to_string()),
        Just("[[decision]]\ncode = \"mid-deploy\"\n".to_string()),
        Just("\u{202e}".to_string()),
        any::<String>(),
        "[0-9a-fA-F:.-]{0,20}",
    ];
    prop::collection::vec(pieces, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: regressions!("fuzz"), ..ProptestConfig::default() })]

    #[test]
    fn urls_parse_or_fail_and_never_show_a_password(s in hostile(), secret in "[A-Za-z0-9]{12}") {
        let _ = DbUrl::parse(&s);
        let with_secret = format!("mysql://u:Q{secret}@h/db?x=1&password=Q{secret}");
        let url = format!("{s}{with_secret}");
        prop_assert!(!redact_url(&url).contains(&format!("Q{secret}")), "{}", redact_url(&url));
        if let Ok(u) = DbUrl::parse(&with_secret) {
            prop_assert!(!u.redacted().contains(&secret));
            prop_assert!(!u.describe().contains(&secret));
        }
    }

    #[test]
    fn oslo_config_files_parse_or_fail(s in hostile()) {
        if let Ok(ini) = IniFile::parse(std::path::Path::new("nova.conf"), &s) {
            let _ = NovaConf::from_ini(ini);
        }
    }

    #[test]
    fn macs_normalise_to_the_one_form_or_nothing(s in hostile()) {
        if let Some(m) = normalize_mac(&s) {
            let m = m.as_str();
            prop_assert_eq!(m.len(), 17);
            prop_assert!(m.chars().all(|c| c == ':' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{}", m);
            let again = normalize_mac(m).map(|n| n.to_string());
            prop_assert_eq!(again.as_deref(), Some(m));
        }
    }

    #[test]
    fn log_lines_parse_or_not_and_masking_is_bounded(s in hostile()) {
        if let Some(l) = oslo::parse(&s) {
            let _ = (l.message(), l.request_id(), l.has_context());
        }
        prop_assert!(collapse::mask(&s).len() <= s.len() * 8 + 16);
    }

    #[test]
    fn resolutions_files_load_or_fail(s in hostile()) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.toml");
        std::fs::write(&p, &s).unwrap();
        match Resolutions::load(&p) {
            Ok(r) => { let _ = r.to_toml(); }
            Err(e) => prop_assert!(e.to_string().len() < 2_000, "a clipped message"),
        }
    }

    #[test]
    fn the_sanitiser_leaves_no_control_character(s in hostile()) {
        for out in [visible(&s), visible_line(&s)] {
            let bidi = '\u{202a}'..='\u{202e}';
            let raw = out.chars().any(|c| (c.is_control() && c != '\n' && c != '\t') || bidi.contains(&c));
            prop_assert!(!raw, "{:?}", out);
        }
        prop_assert!(!visible_line(&s).contains('\n'));
    }
}
