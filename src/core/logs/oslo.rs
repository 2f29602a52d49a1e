//! The one oslo.log line parser (Ironic, Nova): `date time pid LEVEL logger [context] message`, the
//! format of `logging_context_format_string`; traceback lines repeat the prefix without the
//! `[context]` (`logging_exception_prefix`). The follower (the wizard's log pane) and the watcher
//! (`bm2ironic watch`, `verify --takeover`) both read lines through [`parse`] and levels through
//! [`LogLevel::parse`].

use chrono::NaiveDateTime;

/// A record's level; oslo's AUDIT counts as INFO, CRITICAL and TRACE as ERROR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Warning,
    Error,
}

impl LogLevel {
    /// The level of an oslo level name (any case), or None when it is not one.
    pub fn parse(name: &str) -> Option<LogLevel> {
        match name.to_ascii_uppercase().as_str() {
            "DEBUG" => Some(LogLevel::Debug),
            "INFO" | "AUDIT" => Some(LogLevel::Info),
            "WARNING" | "WARN" => Some(LogLevel::Warning),
            "ERROR" | "CRITICAL" | "TRACE" => Some(LogLevel::Error),
            _ => None,
        }
    }

    /// The canonical name: `DEBUG`, `INFO`, `WARNING`, `ERROR`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "DEBUG",
            LogLevel::Info => "INFO",
            LogLevel::Warning => "WARNING",
            LogLevel::Error => "ERROR",
        }
    }
}

/// An oslo.log time stamp (`2014-10-02` `12:00:01.123`; the fraction is optional).
pub fn parse_time(date: &str, time: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(&format!("{date} {time}"), "%Y-%m-%d %H:%M:%S%.f").ok()
}

/// One oslo.log line, split into its fields (borrowed from the line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OsloLine<'a> {
    /// the time of day as written (`12:00:01.123`)
    pub clock: &'a str,
    pub time: NaiveDateTime,
    pub pid: u32,
    pub level: LogLevel,
    /// the level as written (`AUDIT`, `TRACE`, ...)
    pub level_name: &'a str,
    pub logger: &'a str,
    /// what follows the logger: `[context] message` for a record's first line, the text for a
    /// traceback line; None when the line ends at the logger
    pub rest: Option<&'a str>,
}

/// Splits an oslo.log line; None for any other line (a bare traceback line, a wrapped message).
pub fn parse(line: &str) -> Option<OsloLine<'_>> {
    let parts: Vec<&str> = line.splitn(6, ' ').collect();
    if parts.len() < 5 {
        return None;
    }
    Some(OsloLine {
        clock: parts[1],
        time: parse_time(parts[0], parts[1])?,
        pid: parts[2].parse().ok()?,
        level: LogLevel::parse(parts[3])?,
        level_name: parts[3],
        logger: parts[4],
        rest: parts.get(5).copied(),
    })
}

impl<'a> OsloLine<'a> {
    /// A record's first line has a `[context]`; a traceback line (same prefix) has none.
    pub fn has_context(&self) -> bool {
        self.rest.is_some_and(|r| r.starts_with('['))
    }

    /// The request id of the context (`req-...`), when there is one.
    pub fn request_id(&self) -> Option<&'a str> {
        let (ctx, _) = self.rest?.strip_prefix('[')?.split_once("] ")?;
        ctx.split_whitespace().next().filter(|t| *t != "-" && *t != "None")
    }

    /// The message: what follows the `[context] `, or the whole rest.
    pub fn message(&self) -> &'a str {
        let rest = self.rest.unwrap_or("");
        rest.strip_prefix('[').and_then(|r| r.split_once("] ")).map(|(_, m)| m).unwrap_or(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_a_record_line() {
        let l = parse("2014-10-02 12:00:01.123 4242 ERROR ironic.conductor.manager [req-1 admin - -] boom").unwrap();
        assert_eq!((l.clock, l.pid, l.level, l.level_name), ("12:00:01.123", 4242, LogLevel::Error, "ERROR"));
        assert_eq!(l.logger, "ironic.conductor.manager");
        assert!(l.has_context());
        assert_eq!(l.request_id(), Some("req-1"));
        assert_eq!(l.message(), "boom");
        assert_eq!(l.time.to_string(), "2014-10-02 12:00:01.123");
    }

    #[test]
    fn traceback_and_other_lines() {
        let t = parse("2014-10-02 12:00:01.123 4242 TRACE ironic.conductor.manager Traceback (most recent call last):")
            .unwrap();
        assert_eq!(t.level, LogLevel::Error);
        assert!(!t.has_context());
        assert_eq!(t.request_id(), None);
        assert_eq!(t.message(), "Traceback (most recent call last):");
        let ctx_none = parse("2014-10-02 12:00:01 1 AUDIT nova.compute [-] ok").unwrap();
        assert_eq!((ctx_none.level, ctx_none.request_id(), ctx_none.message()), (LogLevel::Info, None, "ok"));
        assert!(parse("Traceback (most recent call last):").is_none());
        assert!(parse("2014-10-02 12:00:01.123 x INFO a [-] pid not a number").is_none());
        assert!(parse("2014-10-02 12:00:01.123 1 LOUD a [-] not a level").is_none());
    }

    #[test]
    fn one_level_table() {
        for (name, level) in [
            ("debug", LogLevel::Debug),
            ("AUDIT", LogLevel::Info),
            ("WARN", LogLevel::Warning),
            ("CRITICAL", LogLevel::Error),
        ] {
            assert_eq!(LogLevel::parse(name), Some(level));
        }
        assert_eq!(LogLevel::parse("LOUD"), None);
        assert_eq!(LogLevel::Warning.as_str(), "WARNING");
    }
}
