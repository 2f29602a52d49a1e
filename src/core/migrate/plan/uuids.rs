//! Uuids as Ironic stores them (lower-case, hyphenated), and the namespace of the ones the plan
//! generates (a node's when its own is missing, invalid or taken; its ports').

use std::borrow::Cow;

/// Namespace of the uuids we generate (stable, so a rehearsal and the real run agree).
pub(super) const BM2IRONIC_NS: uuid::Uuid = uuid::Uuid::from_u128(0x6b6d_3269_726f_4e69_8c00_6e6f_7661_626d);

/// A uuid as Ironic stores it (lower-case, hyphenated), or None when the text is not a uuid.
pub fn normalize_uuid(raw: &str) -> Option<String> {
    uuid_form(raw).map(Cow::into_owned)
}

/// `normalize_uuid` without a copy when the text is already in that form (nearly always: the
/// plan asks this of every node's uuids several times).
pub(crate) fn uuid_form(raw: &str) -> Option<Cow<'_, str>> {
    let t = raw.trim();
    // the hyphenated form only: Nova and Ironic never store the simple or braced forms
    if t.len() != 36 {
        return None;
    }
    let canonical = t.bytes().enumerate().all(|(k, b)| match k {
        8 | 13 | 18 | 23 => b == b'-',
        _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
    });
    if canonical {
        return Some(Cow::Borrowed(t));
    }
    uuid::Uuid::parse_str(t).ok().map(|u| Cow::Owned(u.hyphenated().to_string()))
}
