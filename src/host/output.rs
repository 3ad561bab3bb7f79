//! Report conventions of the host CLI (HOST.md §3): the text report builder (header
//! `reactor <verb>` and a blank line, two-space indent, 15-column labels, 28-column node names,
//! `fresh=<n> reused=<n>` token pairs), `--json` documents (exactly one, 2-space indented, with
//! JavaScript number formatting), warnings and notes on stderr, the error printer, and the
//! broken-pipe rule (a closed stdout ends the command quietly with exit 0).

use std::io::Write;

use crate::host::error::{ErrorKind, HostError, one_line};

/// Width of a report label (`  status         compiled`).
pub(crate) const LABEL_WIDTH: usize = 15;
/// Width of a node name in listings (`    price-watch                  fresh=…`).
pub(crate) const NODE_WIDTH: usize = 28;

/// `fresh=<n> reused=<n>` (HOST.md §3.1).
pub fn pair(fresh: u64, reused: u64) -> String {
    format!("fresh={fresh} reused={reused}")
}

/// `text` left-aligned in `width` columns (counted in characters), followed by at least one
/// space when the text fills the field or overflows it (a label wider than its field is
/// widened to its length plus one space).
pub fn pad(text: &str, width: usize) -> String {
    let n = text.chars().count();
    if n >= width {
        format!("{text} ")
    } else {
        format!("{text}{}", " ".repeat(width - n))
    }
}

/// A text report under construction: the header line, a blank line, then indented lines.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Report {
    buf: String,
}

impl Report {
    /// A report whose first line is `reactor <title>` followed by a blank line.
    pub(crate) fn new(title: &str) -> Report {
        Report {
            buf: format!("reactor {title}\n\n"),
        }
    }

    /// `  <label:15><value>`.
    pub(crate) fn field(&mut self, label: &str, value: impl AsRef<str>) -> &mut Self {
        self.buf.push_str("  ");
        self.buf.push_str(&pad(label, LABEL_WIDTH));
        self.buf.push_str(value.as_ref());
        self.buf.push('\n');
        self
    }

    /// `    <label:13><value>`: a labelled line inside a block, aligned with the fields.
    pub(crate) fn sub_field(&mut self, label: &str, value: impl AsRef<str>) -> &mut Self {
        self.buf.push_str("    ");
        self.buf.push_str(&pad(label, LABEL_WIDTH - 2));
        self.buf.push_str(value.as_ref());
        self.buf.push('\n');
        self
    }

    /// `    <node:28> <rest>`: a node row of a listing.
    pub(crate) fn node_row(&mut self, node: &str, rest: impl AsRef<str>) -> &mut Self {
        self.buf
            .push_str(&format!("    {node:<NODE_WIDTH$} {}\n", rest.as_ref()));
        self
    }

    /// A line with `indent` leading spaces.
    pub(crate) fn line(&mut self, indent: usize, text: impl AsRef<str>) -> &mut Self {
        self.buf.push_str(&" ".repeat(indent));
        self.buf.push_str(text.as_ref());
        self.buf.push('\n');
        self
    }

    /// An empty line (never two in a row).
    pub(crate) fn blank(&mut self) -> &mut Self {
        if !self.buf.ends_with("\n\n") {
            self.buf.push('\n');
        }
        self
    }

    /// The finished text.
    pub(crate) fn finish(self) -> String {
        self.buf
    }
}

/// Writes `text` to stdout. A closed stdout becomes [`ErrorKind::BrokenPipe`] (exit 0, quiet).
pub(crate) fn write_stdout(text: &str) -> Result<(), HostError> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(HostError::from)
}

/// Serializes `value` as one pretty JSON document (2-space indent, JavaScript number
/// formatting, trailing newline; HOST.md §3.2).
pub(crate) fn json_document<T: serde::Serialize + ?Sized>(value: &T) -> String {
    String::from_utf8(crate::format::json::to_js_pretty(value)).unwrap_or_default()
}

/// Prints one JSON document on stdout.
pub(crate) fn print_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<(), HostError> {
    write_stdout(&json_document(value))
}

fn write_stderr(line: &str) {
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    let _ = err.write_all(line.as_bytes());
    let _ = err.flush();
}

/// `reactor: warning: <message>` on stderr (HOST.md §3.1).
pub fn warn(message: &str) {
    write_stderr(&format!("reactor: warning: {}\n", one_line(message)));
}

/// `reactor: note: <message>` on stderr.
pub fn note(message: &str) {
    write_stderr(&format!("reactor: note: {}\n", one_line(message)));
}

/// True when `REACTOR_DEBUG=1` asks for cause chains.
pub(crate) fn debug_enabled() -> bool {
    std::env::var("REACTOR_DEBUG").is_ok_and(|v| v.trim() == "1")
}

/// The stderr text of an error: `reactor: error: <message>`, `hint: …` lines and, when
/// `debug` is set, `  caused by: …` lines.
pub(crate) fn error_text(err: &HostError, debug: bool) -> String {
    let mut s = format!("reactor: error: {}\n", one_line(&err.message));
    for h in &err.hints {
        s.push_str(&format!("hint: {}\n", one_line(h)));
    }
    if debug {
        for c in &err.causes {
            s.push_str(&format!("  caused by: {}\n", one_line(c)));
        }
    }
    s
}

/// The `--json` document of an error: the error's own document when it has one, else
/// `{"status":"error","ok":false,"message":"<message>; hint: …"}` (HOST.md §3.3).
pub(crate) fn error_document(err: &HostError) -> serde_json::Value {
    /// The generic error document.
    #[derive(serde::Serialize)]
    struct ErrorDocument {
        status: &'static str,
        ok: bool,
        message: String,
    }
    match &err.document {
        Some(d) => (**d).clone(),
        None => serde_json::to_value(ErrorDocument {
            status: "error",
            ok: false,
            message: err.json_message(),
        })
        .unwrap_or_default(),
    }
}

/// Prints an error once (stderr, plus the JSON document on stdout with `--json`) and returns
/// its exit code. A broken pipe prints nothing and returns 0.
pub(crate) fn print_error(err: &HostError, json: bool) -> u8 {
    if err.kind == ErrorKind::BrokenPipe {
        return 0;
    }
    write_stderr(&error_text(err, debug_enabled()));
    if json && !err.json_printed {
        // A closed stdout while printing the error document changes nothing.
        let _ = print_json(&error_document(err));
    }
    err.exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_layout() {
        let mut r = Report::new("status");
        r.field("state dir", "/x")
            .field("a-label-longer-than-15", "v")
            .blank()
            .blank()
            .line(2, "cost by node:")
            .node_row("price-watch", pair(4100, 1800))
            .node_row("a-node-name-that-is-longer-than-28", "ok")
            .sub_field("input", pair(1, 0));
        assert_eq!(
            r.finish(),
            "reactor status\n\n  state dir      /x\n  a-label-longer-than-15 v\n\n  cost by node:\n    price-watch                  fresh=4100 reused=1800\n    a-node-name-that-is-longer-than-28 ok\n    input        fresh=1 reused=0\n"
        );
    }

    #[test]
    fn error_forms() {
        let e = HostError::usage("unknown verb 'x'", None);
        assert_eq!(
            error_text(&e, false),
            "reactor: error: unknown verb 'x'\nhint: try 'reactor --help'\n"
        );
        let e = HostError::config("line one\nline two").with_cause("inner");
        assert_eq!(
            error_text(&e, true),
            "reactor: error: line one line two\n  caused by: inner\n"
        );
        let doc = error_document(&HostError::usage("m", Some("logs")));
        assert_eq!(
            json_document(&doc),
            "{\n  \"status\": \"error\",\n  \"ok\": false,\n  \"message\": \"m; hint: try 'reactor logs --help'\"\n}\n"
        );
    }

    #[test]
    fn json_numbers_follow_javascript() {
        let v = serde_json::json!({"a": 1.0, "b": 0.1, "c": 1e21, "d": []});
        assert_eq!(
            json_document(&v),
            "{\n  \"a\": 1,\n  \"b\": 0.1,\n  \"c\": 1e+21,\n  \"d\": []\n}\n"
        );
    }
}
