//! When Nova counts a nova-compute down: the compute host's nova.conf `[DEFAULT] service_down_time`,
//! `report_interval` and `servicegroup_driver`, read as Nova reads them (docs/conflicts.md,
//! `nova-compute-running`). The plan and `hosts` judge the `services` heartbeats with it, so that they
//! say "running" when `nova-manage service list` says `:-)`.

use std::path::Path;

use serde::Serialize;

/// Nova's defaults (2014.2 to today): `service_down_time` 60 s, `report_interval` 10 s.
pub const NOVA_SERVICE_DOWN_TIME: i64 = 60;
pub const NOVA_REPORT_INTERVAL: i64 = 10;

/// How a nova-compute's heartbeat in Nova's database is judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Heartbeats {
    /// A heartbeat at most this many seconds old: the service is up (Nova's `service_down_time`
    /// after Nova's own adjustment).
    pub down_after: i64,
    /// Where that figure comes from, for a conflict's detail.
    pub from: String,
    /// Why the database's heartbeats cannot show whether nova-compute runs (another servicegroup
    /// driver keeps them elsewhere; a report interval of 0 or less sends none).
    pub unknowable: Option<String>,
}

impl Default for Heartbeats {
    fn default() -> Self {
        Heartbeats {
            down_after: NOVA_SERVICE_DOWN_TIME,
            from: "Nova's default service_down_time".into(),
            unknowable: None,
        }
    }
}

impl Heartbeats {
    /// From a nova.conf's `[DEFAULT]` values (None: not set, Nova's default). As Nova's servicegroup
    /// API does at start: a `service_down_time` not above `report_interval` becomes
    /// `int(report_interval * 2.5)`.
    pub fn from_conf(
        path: &Path,
        service_down_time: Option<i64>,
        report_interval: Option<i64>,
        driver: Option<&str>,
    ) -> Heartbeats {
        let file = path.display();
        let interval = report_interval.unwrap_or(NOVA_REPORT_INTERVAL);
        let set = service_down_time.unwrap_or(NOVA_SERVICE_DOWN_TIME);
        let mut from = match service_down_time {
            Some(v) => format!("service_down_time = {v} in {file}"),
            None => format!("Nova's default service_down_time, not set in {file}"),
        };
        let down_after = if set <= interval {
            // Python's int() of a float truncates toward zero, as `as` does
            let raised = (interval as f64 * 2.5) as i64;
            from.push_str(&format!(", raised by Nova to {raised} because report_interval is {interval}"));
            raised
        } else {
            set
        };
        let driver = driver.map(str::trim).filter(|d| !d.is_empty()).unwrap_or("db");
        let unknowable = if driver != "db" {
            Some(format!(
                "servicegroup_driver = {} in {file} keeps nova-compute's heartbeats out of the database",
                crate::core::text::visible_line(driver)
            ))
        } else if interval == 0 {
            Some(format!("report_interval = 0 in {file}: nova-compute sends no heartbeat"))
        } else if interval < 0 {
            Some(format!(
                "report_interval = {interval} in {file}: Nova counts every service down whatever its heartbeat"
            ))
        } else {
            None
        };
        Heartbeats { down_after, from, unknowable }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(sdt: Option<i64>, ri: Option<i64>, driver: Option<&str>) -> Heartbeats {
        Heartbeats::from_conf(Path::new("/etc/nova/nova.conf"), sdt, ri, driver)
    }

    #[test]
    fn nova_defaults_and_a_set_value() {
        assert_eq!(conf(None, None, None).down_after, 60);
        assert_eq!(conf(None, None, None).unknowable, None);
        let h = conf(Some(180), Some(30), Some("db"));
        assert_eq!((h.down_after, h.unknowable), (180, None));
        assert!(h.from.contains("service_down_time = 180 in /etc/nova/nova.conf"), "{}", h.from);
    }

    #[test]
    fn a_down_time_not_above_the_interval_is_raised_as_nova_raises_it() {
        // nova/servicegroup/api.py basic_config_check: int(report_interval * 2.5)
        assert_eq!(conf(Some(60), Some(60), None).down_after, 150);
        assert_eq!(conf(Some(20), Some(30), None).down_after, 75);
        assert_eq!(conf(None, Some(61), None).down_after, 152);
        assert_eq!(conf(Some(-5), Some(7), None).down_after, 17);
        assert_eq!(conf(Some(61), Some(60), None).down_after, 61);
        assert!(conf(Some(60), Some(60), None).from.contains("raised by Nova to 150 because report_interval is 60"));
    }

    #[test]
    fn heartbeats_kept_elsewhere_or_never_sent_cannot_tell() {
        let mc = conf(None, None, Some("mc")).unknowable.unwrap();
        assert!(mc.contains("servicegroup_driver = mc"), "{mc}");
        let zk = conf(None, None, Some(" zk\u{1b}[2J")).unknowable.unwrap();
        assert!(!zk.contains('\u{1b}'), "{zk:?}");
        assert!(conf(None, Some(0), None).unknowable.unwrap().contains("report_interval = 0"));
        assert!(conf(None, Some(-1), None).unknowable.is_some());
        assert_eq!(conf(None, Some(1), Some("db")).unknowable, None);
    }
}
