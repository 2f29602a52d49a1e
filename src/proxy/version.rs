//! The compute microversion a request asks for, read as Nova reads it (pure: no I/O).
//!
//! Nova (`nova.api.openstack.wsgi.Request.set_api_version_request`, with `microversion_parse`):
//! the `OpenStack-API-Version: compute X.Y` header first, else `X-OpenStack-Nova-API-Version: X.Y`,
//! else the default 2.1; `latest` is Nova's maximum. A value that is not `X.Y` (no leading zeros) is
//! **400** "API Version String ... is of invalid format"; a version outside 2.1 .. maximum is
//! **406** "Version ... is not supported by the API". The `os-baremetal-nodes` methods exist from
//! 2.1 to 2.35 (`MAX_PROXY_API_SUPPORT_VERSION`); from 2.36 on Nova answers a bare **404** ("The
//! resource could not be found.", `VersionNotFoundForAPIMethod`). Under `/v2/{tenant_id}` (Nova's
//! legacy v2 compatible mode) the headers are ignored.

/// A microversion, (major, minor).
pub type Version = (u32, u32);

/// Nova's minimum microversion (and the default when none is asked for).
pub const MIN: Version = (2, 1);
/// The last microversion that has `os-baremetal-nodes` (`MAX_PROXY_API_SUPPORT_VERSION`).
pub const LAST_WITH_API: Version = (2, 35);
/// Nova's maximum microversion, as of Nova 34.0.0 (2026.1): what `latest` means, and the bound
/// beyond which Nova answers 406.
pub const NOVA_MAX: Version = (2, 104);

/// A refused version header: the status (400 or 406) and Nova's message.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub status: u16,
    pub message: String,
}

pub fn show(v: Version) -> String {
    format!("{}.{}", v.0, v.1)
}

/// `X.Y` as Nova's `APIVersionRequest` accepts it: `^([1-9]\d*)\.([1-9]\d*|0)$`.
fn parse(s: &str) -> Option<Version> {
    let (a, b) = s.split_once('.')?;
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    if !digits(a) || !digits(b) || a.starts_with('0') || (b.len() > 1 && b.starts_with('0')) {
        return None;
    }
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The version string the headers ask for, as `microversion_parse.get_version` finds it: the last
/// `compute <v>` item of `OpenStack-API-Version` (values folded with `,`), else the last item of
/// the legacy header, else None.
pub fn asked(standard: Option<&str>, legacy: Option<&str>) -> Option<String> {
    if let Some(h) = standard {
        for item in h.split(',').rev() {
            let mut parts = item.trim().splitn(2, char::is_whitespace);
            if let (Some(service), Some(v)) = (parts.next(), parts.next()) {
                if service.eq_ignore_ascii_case("compute") {
                    return Some(v.trim().to_string());
                }
            }
        }
    }
    legacy.map(|l| l.rsplit(',').next().unwrap_or("").trim().to_string())
}

/// The version a request is served at, or Nova's refusal of its header.
pub fn negotiate(asked: Option<&str>) -> Result<Version, Refused> {
    let Some(s) = asked else { return Ok(MIN) };
    if s == "latest" {
        return Ok(NOVA_MAX);
    }
    let Some(v) = parse(s) else {
        return Err(Refused {
            status: 400,
            message: format!("API Version String {s} is of invalid format. Must be of format MajorNum.MinorNum."),
        });
    };
    if v < MIN || v > NOVA_MAX {
        return Err(Refused {
            status: 406,
            message: format!(
                "Version {} is not supported by the API. Minimum is {} and maximum is {}.",
                show(v),
                show(MIN),
                show(NOVA_MAX)
            ),
        });
    }
    Ok(v)
}

/// Whether `os-baremetal-nodes` exists at `v`.
pub fn has_api(v: Version) -> bool {
    (MIN..=LAST_WITH_API).contains(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_as_nova_reads_them() {
        assert_eq!(asked(None, None), None);
        assert_eq!(asked(Some("compute 2.20"), Some("2.3")).as_deref(), Some("2.20"));
        assert_eq!(asked(Some("volume 3.1, compute 2.5"), None).as_deref(), Some("2.5"));
        // no compute item in the standard header: the legacy one
        assert_eq!(asked(Some("volume 3.1"), Some("2.7")).as_deref(), Some("2.7"));
        assert_eq!(asked(Some("compute"), Some("2.7")).as_deref(), Some("2.7"));
        assert_eq!(asked(None, Some("2.1, 2.40")).as_deref(), Some("2.40"));
        assert_eq!(asked(Some("COMPUTE latest"), None).as_deref(), Some("latest"));
    }

    #[test]
    fn versions_and_refusals() {
        assert_eq!(negotiate(None), Ok((2, 1)));
        assert_eq!(negotiate(Some("2.35")), Ok((2, 35)));
        assert_eq!(negotiate(Some("latest")), Ok(NOVA_MAX));
        assert!(has_api((2, 1)) && has_api((2, 35)));
        assert!(!has_api((2, 36)) && !has_api(NOVA_MAX));
        for bad in ["2", "2.x", "", "02.1", "2.01", "2.1.1", " 2.1", "v2.1", "LATEST"] {
            let r = negotiate(Some(bad)).unwrap_err();
            assert_eq!(r.status, 400, "{bad}");
            assert_eq!(
                r.message,
                format!("API Version String {bad} is of invalid format. Must be of format MajorNum.MinorNum.")
            );
        }
        assert_eq!(negotiate(Some("2.0")).unwrap_err().status, 406);
        let r = negotiate(Some("3.0")).unwrap_err();
        assert_eq!(
            r,
            Refused {
                status: 406,
                message: "Version 3.0 is not supported by the API. Minimum is 2.1 and maximum is 2.104.".into()
            }
        );
        assert_eq!(negotiate(Some("2.105")).unwrap_err().status, 406);
        assert_eq!(negotiate(Some("2.104")), Ok((2, 104)));
    }
}
