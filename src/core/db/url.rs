//! Database URLs as operators have them: the SQLAlchemy forms found in nova.conf / ironic.conf
//! (`mysql+pymysql://u:p@h/db?charset=utf8`, `postgresql+psycopg2://...`, `sqlite:////abs.db`) and the
//! plain forms sqlx uses. Parsed once into `DbUrl`, whose password is a `Secret`; every place that
//! shows a URL shows `redacted()`.

use std::fmt;
use std::path::PathBuf;

use percent_encoding::percent_decode_str;

use crate::core::db::secret::Secret;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    MySql,
    Postgres,
    Sqlite,
}

impl Backend {
    pub fn label(self) -> &'static str {
        match self {
            Backend::MySql => "MySQL/MariaDB",
            Backend::Postgres => "PostgreSQL",
            Backend::Sqlite => "SQLite",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::MySql => "mysql",
            Backend::Postgres => "postgres",
            Backend::Sqlite => "sqlite",
        })
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("malformed database URL {url}: {reason}")]
pub struct UrlError {
    /// already redacted
    pub url: String,
    pub reason: String,
}

#[derive(Clone, Debug)]
pub struct DbUrl {
    pub backend: Backend,
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub password: Option<Secret>,
    pub database: Option<String>,
    /// SQLite only: the database file.
    pub path: Option<PathBuf>,
    /// Query parameters we understood and pass on (e.g. charset, sslmode, socket).
    pub params: Vec<(String, String)>,
    redacted: String,
    original: Secret,
    /// Where the URL was written when the operator did not type it (a config file's setting), so
    /// that a failing connection says which one it was.
    pub written_in: Option<String>,
}

impl DbUrl {
    pub fn parse(input: &str) -> Result<DbUrl, UrlError> {
        let input = input.trim();
        let redacted = redact_url(input);
        let err = |reason: &str| UrlError { url: redacted.clone(), reason: reason.to_string() };

        let Some((scheme, rest)) = input.split_once(':') else {
            return Err(err("expected a URL such as mysql+pymysql://user:password@host:3306/nova_bm"));
        };
        let dialect = scheme.split('+').next().unwrap_or("").to_ascii_lowercase();
        let backend = match dialect.as_str() {
            "mysql" | "mariadb" => Backend::MySql,
            "postgresql" | "postgres" | "pgsql" => Backend::Postgres,
            "sqlite" => Backend::Sqlite,
            "" => return Err(err("the URL has no scheme (mysql://, postgresql://, sqlite:///)")),
            other => {
                return Err(err(&format!("unsupported database type '{other}' (use mysql, postgresql or sqlite)")))
            }
        };

        if backend == Backend::Sqlite {
            return parse_sqlite(rest, redacted);
        }

        let Some(rest) = rest.strip_prefix("//") else {
            return Err(err("expected '//' after the scheme, as in mysql://user:password@host/db"));
        };
        // userinfo ends at the last '@' (a password with an unencoded '@' still stays hidden)
        let (userinfo, hostpart) = match rest.rfind('@') {
            Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
            None => (None, rest),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(ui) => {
                let (u, p) = match ui.split_once(':') {
                    Some((u, p)) => (u, Some(p)),
                    None => (ui, None),
                };
                let u = decode(u).map_err(|_| err("the user name is not valid percent-encoded UTF-8"))?;
                let p = match p {
                    Some(p) => {
                        let plain = decode(p).map_err(|_| err("the password is not valid percent-encoded UTF-8"))?;
                        // from now on no output shows it, as written or decoded (core/redact.rs)
                        crate::core::redact::register_secret(p);
                        crate::core::redact::register_secret(&plain);
                        Some(Secret::new(plain))
                    }
                    None => None,
                };
                (if u.is_empty() { None } else { Some(u) }, p)
            }
        };
        let (hostport, query) = match hostpart.split_once('?') {
            Some((h, q)) => (h, Some(q)),
            None => (hostpart, None),
        };
        let (hostport, database) = match hostport.split_once('/') {
            Some((h, d)) => (h, if d.is_empty() { None } else { Some(d) }),
            None => (hostport, None),
        };
        let (host, port) = split_host_port(hostport).map_err(|r| err(&r))?;
        let default_port = if backend == Backend::MySql { 3306 } else { 5432 };
        let database = match database {
            Some(d) => Some(decode(d).map_err(|_| err("the database name is not valid percent-encoded UTF-8"))?),
            None => None,
        };
        if let Some(d) = &database {
            if d.contains('/') {
                return Err(err("the database name contains '/'"));
            }
        }

        let mut params = Vec::new();
        let mut socket = None;
        let (mut user, mut password) = (user, password);
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = decode(v).map_err(|_| err("a query parameter is not valid percent-encoded UTF-8"))?;
            match (backend, k) {
                // libpq and SQLAlchemy's drivers accept the credentials as parameters too
                (_, "password" | "passwd") if password.is_none() => {
                    crate::core::redact::register_secret(&v);
                    password = Some(Secret::new(v))
                }
                (_, "user" | "username") if user.is_none() && !v.is_empty() => user = Some(v),
                (Backend::MySql, "charset" | "ssl-mode" | "ssl_mode" | "ssl-ca") => {
                    params.push((k.replace('_', "-"), v))
                }
                (Backend::MySql, "unix_socket" | "socket") => socket = Some(v),
                (Backend::Postgres, "sslmode" | "sslrootcert" | "application_name") => params.push((k.to_string(), v)),
                (Backend::Postgres, "host") => socket = Some(v),
                // SQLAlchemy / driver options that do not apply here (e.g. read_default_file, connect_timeout)
                _ => {}
            }
        }
        let host = match (host, socket) {
            (h, Some(sock)) if h.is_empty() || h == "localhost" => sock,
            (h, _) if h.is_empty() => "localhost".to_string(),
            (h, _) => h,
        };
        Ok(DbUrl {
            backend,
            host,
            port: port.unwrap_or(default_port),
            user,
            password,
            database,
            path: None,
            params,
            redacted,
            original: Secret::new(input),
            written_in: None,
        })
    }

    /// The URL as given, password included: only to prefill the wizard's (masked) fields.
    pub fn expose_url(&self) -> &str {
        self.original.expose()
    }

    /// The URL with the password replaced by `***`: the only form that is ever shown or logged.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }

    /// "MySQL/MariaDB at 127.0.0.1:13306 as user nova" / "SQLite file /x/nova_bm.db": names what to fix
    /// without the password.
    pub fn describe(&self) -> String {
        let what = match self.backend {
            Backend::Sqlite => {
                format!("SQLite file {}", self.path.as_deref().map(|p| p.display().to_string()).unwrap_or_default())
            }
            b => format!("{} at {} as user {}", b.label(), self.endpoint(), self.user.as_deref().unwrap_or("(none)")),
        };
        match &self.written_in {
            Some(w) => format!("{what} ({w})"),
            None => what,
        }
    }

    pub fn endpoint(&self) -> String {
        if self.host.starts_with('/') {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Scrubs this URL's password from a message (driver errors may echo what they were given).
    pub fn scrub(&self, text: &str) -> String {
        match &self.password {
            Some(p) => p.scrub(text),
            None => text.to_string(),
        }
    }
}

impl fmt::Display for DbUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted)
    }
}

fn parse_sqlite(rest: &str, redacted: String) -> Result<DbUrl, UrlError> {
    // a SQLite URL holds no password: the redacted form is the original
    let err = |reason: &str| UrlError { url: redacted.clone(), reason: reason.to_string() };
    let rest = rest.split_once('?').map(|(p, _)| p).unwrap_or(rest);
    // a file URL has no user or password: refuse it rather than show them as part of a path
    let authority = rest.strip_prefix("//").unwrap_or("");
    if authority.split('/').next().is_some_and(|a| a.contains('@')) {
        return Err(err("a SQLite URL has no user or password: write sqlite:////absolute/path.sqlite"));
    }
    // SQLAlchemy: sqlite:////abs/path (absolute), sqlite:///rel/path (relative), sqlite:// (memory).
    // sqlx: sqlite://path, sqlite:path.
    let path = if let Some(p) = rest.strip_prefix("///") {
        p.to_string()
    } else if let Some(p) = rest.strip_prefix("//") {
        p.to_string()
    } else {
        rest.to_string()
    };
    if path.is_empty() || path == ":memory:" {
        return Err(err("an in-memory SQLite database holds nothing to migrate: name a file, as in sqlite:////var/lib/nova/nova_bm.sqlite"));
    }
    let path = decode(&path).map_err(|_| err("the path is not valid percent-encoded UTF-8"))?;
    Ok(DbUrl {
        backend: Backend::Sqlite,
        host: String::new(),
        port: 0,
        user: None,
        password: None,
        database: None,
        path: Some(PathBuf::from(path)),
        params: Vec::new(),
        original: Secret::new(redacted.clone()),
        written_in: None,
        redacted,
    })
}

fn split_host_port(hostport: &str) -> Result<(String, Option<u16>), String> {
    if let Some(v6) = hostport.strip_prefix('[') {
        let Some((h, after)) = v6.split_once(']') else {
            return Err("unclosed '[' in an IPv6 host".into());
        };
        let port = match after.strip_prefix(':') {
            Some(p) => Some(parse_port(p)?),
            None if after.is_empty() => None,
            None => return Err(format!("unexpected '{after}' after the IPv6 host")),
        };
        return Ok((h.to_string(), port));
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) => Ok((h.to_string(), Some(parse_port(p)?))),
        None => Ok((hostport.to_string(), None)),
    }
}

fn parse_port(p: &str) -> Result<u16, String> {
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(format!("'{p}' is not a port number (1-65535)")),
        Ok(n) => Ok(n),
    }
}

fn decode(s: &str) -> Result<String, std::str::Utf8Error> {
    percent_decode_str(s).decode_utf8().map(|c| c.into_owned())
}

/// One URL (or argument) with its password hidden: the project's one redactor (core/redact.rs).
pub use crate::core::redact::redact_url;

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_in_the_query_string_are_honoured_and_redacted() {
        let u = DbUrl::parse("postgresql://nova@db:5432/nova_bm?sslmode=require&password=Qs3cret").unwrap();
        assert_eq!(u.password.as_ref().unwrap().expose(), "Qs3cret");
        assert!(!u.redacted().contains("Qs3cret"), "{}", u.redacted());
        assert!(!format!("{u:?}").contains("Qs3cret"));
        let u = DbUrl::parse("mysql://db/nova_bm?user=nova&passwd=Qs3cret").unwrap();
        assert_eq!((u.user.as_deref(), u.password.as_ref().map(|p| p.expose())), (Some("nova"), Some("Qs3cret")));
        assert_eq!(
            redact_url("x postgres://h/db?password=abc&sslmode=disable y"),
            "x postgres://h/db?password=***&sslmode=disable y"
        );
        // a URL that does not parse is still redacted
        assert!(!redact_url("postgresql:/h/db?PASSWORD=abc").contains("abc"));
    }

    #[test]
    fn a_sqlite_url_with_userinfo_is_refused_without_the_password() {
        let e = DbUrl::parse("sqlite://user:SECRETx@/var/lib/x.sqlite").unwrap_err().to_string();
        assert!(!e.contains("SECRETx"), "{e}");
        assert!(e.contains("no user or password"), "{e}");
    }

    use super::*;

    #[test]
    fn sqlalchemy_mysql_with_pymysql_and_charset() {
        let u = DbUrl::parse("mysql+pymysql://nova:s3cret@10.0.0.5:3307/nova_bm?charset=utf8&read_timeout=5").unwrap();
        assert_eq!(u.backend, Backend::MySql);
        assert_eq!(u.host, "10.0.0.5");
        assert_eq!(u.port, 3307);
        assert_eq!(u.user.as_deref(), Some("nova"));
        assert_eq!(u.password.as_ref().unwrap().expose(), "s3cret");
        assert_eq!(u.database.as_deref(), Some("nova_bm"));
        assert_eq!(u.param("charset"), Some("utf8"));
        assert_eq!(u.param("read_timeout"), None);
        assert_eq!(u.redacted(), "mysql+pymysql://nova:***@10.0.0.5:3307/nova_bm?charset=utf8&read_timeout=5");
        assert!(!format!("{u:?}").contains("s3cret"));
    }

    #[test]
    fn plain_mysql_default_port() {
        let u = DbUrl::parse("mysql://root@localhost/nova_bm").unwrap();
        assert_eq!(u.port, 3306);
        assert!(u.password.is_none());
        assert_eq!(u.host, "localhost");
    }

    #[test]
    fn postgres_forms() {
        for s in [
            "postgresql+psycopg2://ironic:p%40ss@db:5433/ironic",
            "postgres://ironic:p%40ss@db:5433/ironic",
            "postgresql://ironic:p%40ss@db:5433/ironic",
        ] {
            let u = DbUrl::parse(s).unwrap();
            assert_eq!(u.backend, Backend::Postgres);
            assert_eq!(u.port, 5433);
            assert_eq!(u.password.as_ref().unwrap().expose(), "p@ss", "percent-decoded password from {s}");
            assert!(!u.redacted().contains("p%40ss"));
        }
        assert_eq!(DbUrl::parse("postgresql://a@h/d").unwrap().port, 5432);
    }

    #[test]
    fn password_with_unencoded_specials_stays_hidden() {
        let u = DbUrl::parse("mysql://nova:pa:ss/w@rd@db.example/nova_bm").unwrap();
        assert_eq!(u.password.as_ref().unwrap().expose(), "pa:ss/w@rd");
        assert_eq!(u.host, "db.example");
        assert!(!u.redacted().contains("w@rd"));
    }

    #[test]
    fn sqlite_absolute_relative_and_sqlx_forms() {
        assert_eq!(
            DbUrl::parse("sqlite:////var/lib/nova/bm.db").unwrap().path.unwrap(),
            PathBuf::from("/var/lib/nova/bm.db")
        );
        assert_eq!(DbUrl::parse("sqlite:///rel/bm.db").unwrap().path.unwrap(), PathBuf::from("rel/bm.db"));
        assert_eq!(DbUrl::parse("sqlite://bm.db").unwrap().path.unwrap(), PathBuf::from("bm.db"));
        assert_eq!(DbUrl::parse("sqlite:bm.db?mode=ro").unwrap().path.unwrap(), PathBuf::from("bm.db"));
        assert!(DbUrl::parse("sqlite://").is_err());
        assert!(DbUrl::parse("sqlite::memory:").is_err());
    }

    #[test]
    fn unix_socket_parameter() {
        let u = DbUrl::parse("mysql+pymysql://nova:x@localhost/nova_bm?unix_socket=/run/mysqld/mysqld.sock").unwrap();
        assert_eq!(u.host, "/run/mysqld/mysqld.sock");
        assert_eq!(u.endpoint(), "/run/mysqld/mysqld.sock");
    }

    #[test]
    fn malformed_urls_are_refused_without_showing_the_password() {
        for bad in [
            "oracle://u:topsecret@h/db",
            "mysql:/u:topsecret@h/db",
            "mysql://u:topsecret@h:99999/db",
            "mysql://u:topsecret@h:abc/db",
            "nonsense",
            "mysql://u:topsecret@[::1/db",
        ] {
            let e = DbUrl::parse(bad).unwrap_err();
            assert!(!e.to_string().contains("topsecret"), "{e}");
        }
    }

    #[test]
    fn ipv6_host() {
        let u = DbUrl::parse("mysql://u:p@[::1]:3306/nova_bm").unwrap();
        assert_eq!(u.host, "::1");
        assert_eq!(u.port, 3306);
    }

    #[test]
    fn redact_plain_text() {
        assert_eq!(redact_url("mysql://a:b@c/d"), "mysql://a:***@c/d");
        assert_eq!(redact_url("mysql://a@c/d"), "mysql://a@c/d");
        assert_eq!(redact_url("no url here"), "no url here");
        assert_eq!(redact_url("mysql:/u:pw@h/db"), "mysql:/u:***@h/db");
        assert_eq!(redact_url("u:pw@h"), "u:***@h");
    }
}
