//! Plain aligned text tables for the CLI (no colour: output is for pipes and logs as much as eyes).

pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    /// columns aligned right (numbers)
    right: Vec<bool>,
}

impl Table {
    pub fn new(headers: &[(&str, bool)]) -> Table {
        Table {
            headers: headers.iter().map(|(h, _)| h.to_string()).collect(),
            right: headers.iter().map(|(_, r)| *r).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            let mut parts = Vec::with_capacity(n);
            for (i, c) in cells.iter().enumerate() {
                let pad = widths[i].saturating_sub(c.chars().count());
                if self.right[i] {
                    parts.push(format!("{}{c}", " ".repeat(pad)));
                } else if i + 1 == n {
                    parts.push(c.clone());
                } else {
                    parts.push(format!("{c}{}", " ".repeat(pad)));
                }
            }
            out.push_str(parts.join("  ").trim_end());
            out.push('\n');
        };
        line(&self.headers, &mut out);
        for r in &self.rows {
            line(r, &mut out);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_columns() {
        let mut t = Table::new(&[("ID", true), ("NAME", false), ("X", false)]);
        t.row(vec!["1".into(), "alpha".into(), "a".into()]);
        t.row(vec!["100".into(), "b".into(), "".into()]);
        assert_eq!(t.render(), " ID  NAME   X\n  1  alpha  a\n100  b\n");
    }
}
