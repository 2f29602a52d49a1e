//! Small helpers for SQL that runs on all three backends: values to bind, `?` -> `$n` placeholders
//! (applied by `Db` and `Tx` when they run a statement), multi-row INSERTs, DDL files.

use chrono::NaiveDateTime;

use crate::core::db::url::Backend;

/// A value to bind, whatever the backend.
#[derive(Debug, Clone)]
pub enum Val {
    Int(Option<i64>),
    Bool(Option<bool>),
    Text(Option<String>),
    Time(Option<NaiveDateTime>),
}

impl Val {
    /// About how many bytes the value takes on the wire (its text, or a fixed width and a header).
    pub fn wire_bytes(&self) -> usize {
        match self {
            Val::Text(Some(t)) => t.len() + 9,
            _ => 12,
        }
    }
}

impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::Int(Some(v))
    }
}

impl From<bool> for Val {
    fn from(v: bool) -> Val {
        Val::Bool(Some(v))
    }
}

impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Text(Some(v))
    }
}

impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Text(Some(v.to_string()))
    }
}

impl From<&String> for Val {
    fn from(v: &String) -> Val {
        Val::Text(Some(v.clone()))
    }
}

impl From<NaiveDateTime> for Val {
    fn from(v: NaiveDateTime) -> Val {
        Val::Time(Some(v))
    }
}

/// One statement (with `?` placeholders) and its values.
pub type Stmt = (String, Vec<Val>);

/// About how many bytes a statement takes on the wire: its text and its values.
pub fn statement_bytes(sql: &str, vals: &[Val]) -> usize {
    sql.len() + vals.iter().map(Val::wire_bytes).sum::<usize>()
}

/// Text values for an IN list.
pub fn texts<S: AsRef<str>>(items: &[S]) -> Vec<Val> {
    items.iter().map(|s| Val::from(s.as_ref())).collect()
}

/// `?` placeholders to `$1..$n` on PostgreSQL (our SQL never has `?` inside literals).
pub fn placeholders(backend: Backend, sql: &str) -> String {
    if backend != Backend::Postgres {
        return sql.to_string();
    }
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

/// `INSERT INTO table (cols) VALUES (...), (...)` for a batch of rows.
pub fn multi_insert(table: &str, cols: &[&str], rows: Vec<Vec<Val>>) -> Stmt {
    let row = format!("({})", vec!["?"; cols.len()].join(", "));
    let sql = format!("INSERT INTO {table} ({}) VALUES {}", cols.join(", "), vec![row; rows.len()].join(", "));
    (sql, rows.into_iter().flatten().collect())
}

/// `(?, ?, ...)` with n marks, for IN lists.
pub fn marks(n: usize) -> String {
    format!("({})", vec!["?"; n].join(", "))
}

/// Statements of a DDL file (split at `;` line ends, `--` comments dropped).
pub fn statements(ddl: &str) -> Vec<String> {
    let body: String =
        ddl.lines().map(|l| l.split("--").next().unwrap_or("").trim_end()).collect::<Vec<_>>().join("\n");
    body.split(";\n").map(str::trim).map(|s| s.trim_end_matches(';').to_string()).filter(|s| !s.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_placeholders_are_numbered() {
        assert_eq!(placeholders(Backend::Postgres, "VALUES (?, ?), (?)"), "VALUES ($1, $2), ($3)");
        assert_eq!(placeholders(Backend::MySql, "VALUES (?)"), "VALUES (?)");
    }

    #[test]
    fn multi_row_insert() {
        let (sql, vals) = multi_insert(
            "t",
            &["a", "b"],
            vec![vec![Val::Int(Some(1)), Val::Int(None)], vec![Val::Int(Some(2)), Val::Int(None)]],
        );
        assert_eq!(sql, "INSERT INTO t (a, b) VALUES (?, ?), (?, ?)");
        assert_eq!(placeholders(Backend::Postgres, &sql), "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)");
        assert_eq!(vals.len(), 4);
    }

    #[test]
    fn ddl_statements() {
        let s =
            statements("-- c\nCREATE TABLE a (x INT);\n\nCREATE TABLE b (y INT); -- tail\nINSERT INTO a VALUES (1);\n");
        assert_eq!(s, vec!["CREATE TABLE a (x INT)", "CREATE TABLE b (y INT)", "INSERT INTO a VALUES (1)"]);
    }
}
