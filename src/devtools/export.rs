//! `--export <file.html>` (VIEWER.md §2.9, §8.18): one self-contained HTML report.
//!
//! The file holds the SPA's stylesheet and script inline, the snapshot (with each frame's cause,
//! [`crate::replay::why`]) in `<script type="application/json" id="snapshot">`, the ledger name
//! in `id="snapshot-ledger"` and the embedded world models in `id="snapshot-outputs"`; the SPA
//! reads them instead of calling `/api` (no live follow). A `Content-Security-Policy` meta tag
//! allows exactly the three inline scripts (by SHA-256), inline styles and `data:`/`blob:` images,
//! and nothing else: the page makes no network request, from `file://` or anywhere.
//!
//! Around the replay the report has static, escaped sections: a header (title, counts, the
//! chain verdict, the synthetic banner), **Run** (frames, per-node and per-cause tables, the
//! topology's edges, the raw `receipts.json` capped at [`RAW_CAP`]), **Outputs** (every node's
//! files at its last rendered `atomicVersion`; `.html` files previewed in a `sandbox=""`
//! `srcdoc` iframe with an "open in tab" button) and **Contract** (the `.prose.md` sources).
//! Project caps: the frames table lists the first [`FRAME_ROWS`] frames (the replay shows them
//! all); an output file larger than [`FILE_CAP`] is listed without its content.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::devtools::pages::{FramesWithWhy, SnapshotView};
use crate::format::json;
use crate::replay::describe::{DescribeData, DescribeOptions, describe_state_dir};
use crate::replay::open::OpenedStateDir;
use crate::replay::snapshot::{LabelMap, ReplaySnapshot, build_snapshot};
use crate::replay::why::{Why, explain_ledger};
use crate::replay::worldmodel::{NodeWorldModelView, read_node_world_model};

/// The raw `receipts.json` text shown in the Run section is cut after this many bytes.
pub(crate) const RAW_CAP: usize = 4 * 1024 * 1024;
/// Rows of the frames table.
pub(crate) const FRAME_ROWS: usize = 10_000;
/// Output files larger than this are listed without content.
pub(crate) const FILE_CAP: usize = 1024 * 1024;

const INDEX_HTML: &str = include_str!("../../assets/index.html");
const APP_JS: &str = include_str!("../../assets/app.js");
const FRAMES_JS: &str = include_str!("../../assets/frames.js");
const APP_CSS: &str = include_str!("../../assets/app.css");
const REPORT_JS: &str = include_str!("export/report.js");
const REPORT_CSS: &str = include_str!("export/report.css");
const FAVICON_START: &str = "<link rel=\"icon\"";

/// Options of [`export_report`] (VIEWER.md §7).
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// `--title`: the report's title (default: the beats title, else `Reactor run — <stateDir>`).
    pub title: Option<String>,
    /// `--source`: a `.prose.md` file or a directory of them.
    pub source: Option<PathBuf>,
}

/// Why a report could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// `--source` named a path that yields no `.prose.md` file.
    #[error("--source {0} contains no .prose.md files")]
    NoSources(String),
}

/// One embedded contract source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SourceFile {
    /// The path as shown (relative to the `--source` directory, or as given).
    pub path: String,
    /// The file's text (lossy UTF-8).
    pub text: String,
}

/// HTML-escapes text for element content and double-quoted attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// JSON text made safe inside `<script type="application/json">`: every `</` becomes `<\/`
/// and every `<!--` becomes `\u003c!--` (both only occur inside JSON strings, where the
/// escapes read back as the same characters).
pub(crate) fn script_json(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .replace("</", "<\\/")
        .replace("<!--", "\\u003c!--")
}

fn utf16_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

fn prose_files_in(dir: &Path, base: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".prose.md") && p.is_file() {
            let rel = p
                .strip_prefix(base)
                .unwrap_or(&p)
                .to_string_lossy()
                .into_owned();
            out.push((rel, p));
        }
    }
}

/// The contract sources of VIEWER.md §2.9 step 3: `--source <file>` is that file;
/// `--source <dir>` every `*.prose.md` in the directory and its `src/` child (`index.prose.md`
/// first, then by path in UTF-16 order); without `--source`, `root.prose.md` and
/// `sources/*.prose.md` in the state directory (none for an embedded example).
pub(crate) fn collect_sources(
    source: Option<&Path>,
    opened: &OpenedStateDir,
) -> Result<Vec<SourceFile>, ExportError> {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    match source {
        Some(p) if p.is_file() => found.push((p.display().to_string(), p.to_path_buf())),
        Some(p) => {
            prose_files_in(p, p, &mut found);
            prose_files_in(&p.join("src"), p, &mut found);
            found.sort_by(|a, b| {
                let first = |s: &str| !Path::new(s).ends_with("index.prose.md");
                first(&a.0).cmp(&first(&b.0)).then(utf16_cmp(&a.0, &b.0))
            });
        }
        None => {
            if let Some(root) = opened.source.disk_root() {
                let r = root.join("root.prose.md");
                if r.is_file() {
                    found.push(("root.prose.md".into(), r));
                }
                let mut more = Vec::new();
                prose_files_in(&root.join("sources"), root, &mut more);
                more.sort_by(|a, b| utf16_cmp(&a.0, &b.0));
                found.extend(more);
            }
        }
    }
    let files: Vec<SourceFile> = found
        .into_iter()
        .filter_map(|(path, p)| {
            let bytes = std::fs::read(&p).ok()?;
            Some(SourceFile {
                path,
                text: String::from_utf8_lossy(&bytes).into_owned(),
            })
        })
        .collect();
    match source {
        Some(p) if files.is_empty() => Err(ExportError::NoSources(p.display().to_string())),
        _ => Ok(files),
    }
}

/// The report's title (VIEWER.md §8.18): `--title`, else a non-empty beats title, else
/// `Reactor run — <stateDir>`.
pub(crate) fn report_title(opened: &OpenedStateDir, title: Option<&str>) -> String {
    if let Some(t) = title {
        return t.to_string();
    }
    match opened.beats.as_ref().map(|b| b.title.as_str()) {
        Some(t) if !t.is_empty() => t.to_string(),
        _ => format!("Reactor run — {}", opened.state_dir),
    }
}

/// `'sha256-<base64>'` of a script's text, for the page's CSP.
fn csp_hash(script: &str) -> String {
    let d = Sha256::digest(script.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(d)
    )
}

/// The page's Content-Security-Policy (a `<meta http-equiv>`): nothing may load; only the three
/// inline scripts (frames.js, app.js, the report's own) run.
pub(crate) fn export_csp() -> String {
    format!(
        "default-src 'none'; script-src {} {} {}; style-src 'unsafe-inline'; img-src data: blob:; frame-src 'none'; form-action 'none'; base-uri 'none'",
        csp_hash(FRAMES_JS),
        csp_hash(APP_JS),
        csp_hash(REPORT_JS)
    )
}

/// The SPA's markup: the `<div id="app">` element of `index.html`.
fn app_markup() -> &'static str {
    let start = INDEX_HTML.find("<div id=\"app\">").unwrap_or(0);
    let end = INDEX_HTML.find("<script src=").unwrap_or(INDEX_HTML.len());
    &INDEX_HTML[start..end]
}

fn favicon() -> &'static str {
    let Some(s) = INDEX_HTML.find(FAVICON_START) else {
        return "";
    };
    let end = INDEX_HTML[s..].find('>').map_or(s, |e| s + e + 1);
    &INDEX_HTML[s..end]
}

/// The raw `receipts.json` text (from disk or the embedded example), cut at a character
/// boundary after [`RAW_CAP`] bytes. → `(text, complete)`.
fn raw_receipts(opened: &OpenedStateDir) -> (String, bool) {
    let bytes = opened
        .source
        .read(crate::format::layout::RECEIPTS_FILE)
        .ok()
        .flatten()
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    if text.len() <= RAW_CAP {
        return (text.into_owned(), true);
    }
    let mut cut = RAW_CAP;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    (text[..cut].to_string(), false)
}

/// Each node's world model at its last rendered `atomicVersion`, in snapshot node order then
/// first-seen order of other nodes. Text files keep `text` and an empty `base64` (the SPA
/// compares and shows text); binary files keep `base64`.
fn outputs(opened: &OpenedStateDir, snap: &ReplaySnapshot) -> Vec<NodeWorldModelView> {
    let mut last: Vec<(String, String)> = Vec::new();
    let mut pos: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for n in &snap.nodes {
        pos.insert(&n.id, last.len());
        last.push((n.id.clone(), String::new()));
    }
    for f in &snap.frames {
        let k = *pos.entry(&f.node).or_insert_with(|| {
            last.push((f.node.clone(), String::new()));
            last.len() - 1
        });
        if f.status == crate::format::receipt::Status::Rendered && !f.atomic_version.is_empty() {
            last[k].1 = f.atomic_version.clone();
        }
    }
    last.into_iter()
        .filter(|(_, v)| !v.is_empty())
        .filter_map(|(node, v)| read_node_world_model(opened, &node, &v))
        .map(|mut view| {
            for f in &mut view.files {
                if f.text.is_some() || f.bytes > FILE_CAP {
                    f.base64 = String::new();
                }
                if f.bytes > FILE_CAP {
                    f.text = None;
                }
            }
            view
        })
        .collect()
}

/// `export_report` (VIEWER.md §7): the `--export` HTML of an opened state directory.
pub fn export_report(opened: &OpenedStateDir, opts: &ExportOptions) -> Result<String, ExportError> {
    build_report(opened, opts).map(|(html, _)| html)
}

/// What the CLI's summary line reports: `(nodes, edges, receipts, chain ok)` of the snapshot.
type Counts = (usize, usize, usize, bool);

fn build_report(
    opened: &OpenedStateDir,
    opts: &ExportOptions,
) -> Result<(String, Counts), ExportError> {
    let sources = collect_sources(opts.source.as_deref(), opened)?;
    let snap = build_snapshot(opened);
    let whys = explain_ledger(&opened.raw, opened.topology.as_ref());
    let described = describe_state_dir(
        opened,
        &DescribeOptions {
            use_labels: None,
            synthetic: opened.synthetic,
        },
    )
    .data;
    let title = report_title(opened, opts.title.as_deref());
    let outs = outputs(opened, &snap);
    let mut h = String::with_capacity(1 << 20);
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"dark light\">\n<title>{}</title>\n{}\n\
         <style>\n{}</style>\n<style>\n{}</style>\n</head>\n<body class=\"exported\">\n",
        esc(&export_csp()),
        esc(&title),
        favicon(),
        APP_CSS,
        REPORT_CSS
    );
    header(&mut h, &title, &snap, &described);
    h.push_str("<section id=\"replay\" class=\"report-section\">\n<h2>Replay</h2>\n");
    h.push_str(app_markup());
    h.push_str("</section>\n");
    run_section(&mut h, opened, &snap, &described, &whys);
    outputs_section(&mut h, &outs);
    contract_section(&mut h, &sources);
    let why = |i: usize| whys.get(i).cloned().flatten();
    let embedded = json::to_js_compact(&SnapshotView::new(
        &snap,
        FramesWithWhy {
            frames: &snap.frames,
            why: &why,
        },
        None,
    ));
    let _ = writeln!(
        h,
        "<script type=\"application/json\" id=\"snapshot\">{}</script>",
        script_json(&embedded)
    );
    let ledger = serde_json::json!({
        "stateDir": opened.state_dir,
        "path": serde_json::Value::Null,
        "example": opened.synthetic.then(|| opened.state_dir.strip_prefix("example:").unwrap_or(&opened.state_dir).to_string()),
        "synthetic": opened.synthetic,
    });
    let _ = writeln!(
        h,
        "<script type=\"application/json\" id=\"snapshot-ledger\">{}</script>",
        script_json(ledger.to_string().as_bytes())
    );
    let mut by_node = serde_json::Map::new();
    for v in &outs {
        let view: serde_json::Value =
            serde_json::from_slice(&json::to_js_compact(v)).unwrap_or_default();
        by_node.insert(
            v.node.clone(),
            serde_json::json!({ v.version.clone(): view }),
        );
    }
    let _ = write!(
        h,
        "<script type=\"application/json\" id=\"snapshot-outputs\">{}</script>\n<script>{}</script>\n<script>{}</script>\n<script>{}</script>\n</body>\n</html>\n",
        script_json(serde_json::Value::Object(by_node).to_string().as_bytes()),
        FRAMES_JS,
        APP_JS,
        REPORT_JS
    );
    let counts = (
        snap.nodes.len(),
        snap.edges.len(),
        snap.frames.len(),
        snap.chain_verify.ok,
    );
    Ok((h, counts))
}

fn header(h: &mut String, title: &str, snap: &ReplaySnapshot, d: &DescribeData) {
    let ok = snap.chain_verify.ok;
    let _ = write!(
        h,
        "<header id=\"report-head\">\n<h1 id=\"report-title\">{}</h1>\n\
         <div id=\"report-summary\">{} nodes · {} edges · {} receipts — rendered {} · skipped {} · failed {} — fresh {} tokens</div>\n\
         <span id=\"report-verdict\" class=\"pill {}\">{}</span>\n",
        esc(title),
        snap.nodes.len(),
        snap.edges.len(),
        snap.frames.len(),
        d.dispositions.rendered,
        d.dispositions.skipped,
        d.dispositions.failed,
        snap.cost_rollup.total.fresh,
        if ok { "ok" } else { "bad" },
        if ok {
            "chain ✓ verified"
        } else {
            "chain ✗ TAMPERED"
        },
    );
    if !ok {
        h.push_str("<ul id=\"report-chain-errors\">\n");
        for e in &snap.chain_verify.errors {
            let _ = writeln!(h, "<li>{}</li>", esc(e));
        }
        h.push_str("</ul>\n");
    }
    if snap.synthetic {
        h.push_str("<div id=\"report-synthetic\"><b>synthetic sample</b> · a bundled example written by a fixture script — not a recorded run; token counts are illustrative, not a bill</div>\n");
    }
    h.push_str("<nav><a href=\"#replay\">Replay</a> · <a href=\"#run\">Run</a> · <a href=\"#outputs\">Outputs</a> · <a href=\"#contract\">Contract</a></nav>\n</header>\n");
}

fn run_section(
    h: &mut String,
    opened: &OpenedStateDir,
    snap: &ReplaySnapshot,
    d: &DescribeData,
    whys: &[Option<Why>],
) {
    h.push_str("<section id=\"run\" class=\"report-section\">\n<h2>Run</h2>\n");
    frames_table(h, opened, snap, whys);
    h.push_str("</details>\n<details open><summary>nodes</summary>\n<table><thead><tr><th>node</th><th>label</th><th>rendered</th><th>skipped</th><th>failed</th><th>fresh</th><th>chain</th></tr></thead><tbody>\n");
    for n in &d.nodes {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
            esc(&n.node),
            esc(&n.label),
            if n.off_topology {
                " (off-topology)"
            } else {
                ""
            },
            n.rendered,
            n.skipped,
            n.failed,
            n.fresh,
            if n.chain_ok { "ok" } else { "bad" },
            if n.chain_ok { "✓" } else { "✗" }
        );
    }
    h.push_str("</tbody></table>\n</details>\n<details open><summary>cost by surprise cause</summary>\n<table><thead><tr><th>cause</th><th>receipts</th><th>fresh</th><th>reused</th></tr></thead><tbody>\n");
    let bc = &snap.cost_rollup.by_cause;
    for (name, b) in [
        ("input", &bc.input),
        ("self", &bc.self_),
        ("external", &bc.external),
    ] {
        let _ = writeln!(
            h,
            "<tr><td>{name}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            b.receipts, b.fresh, b.reused
        );
    }
    let t = &snap.cost_rollup.total;
    let _ = writeln!(
        h,
        "<tr class=\"total\"><td>total</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        t.receipts, t.fresh, t.reused
    );
    let _ = write!(
        h,
        "</tbody></table>\n</details>\n<details><summary>topology · {} edges</summary>\n<ul class=\"edges\">\n",
        snap.edges.len()
    );
    if !snap.has_topology {
        h.push_str("<li>no saved topology (node-only fallback)</li>\n");
    }
    for e in &snap.edges {
        let _ = writeln!(
            h,
            "<li>{} → {} <span class=\"facet\">({})</span></li>",
            esc(&e.producer),
            esc(&e.subscriber),
            esc(&e.facet)
        );
    }
    let (raw, complete) = raw_receipts(opened);
    let _ = write!(
        h,
        "</ul>\n</details>\n<details><summary>receipts.json · {} bytes</summary>\n",
        raw.len()
    );
    if !complete {
        let _ = writeln!(
            h,
            "<p class=\"note\">receipts.json is larger than {} MiB; the text below is cut there.</p>",
            RAW_CAP >> 20
        );
    }
    let _ = write!(
        h,
        "<pre id=\"raw-receipts\" class=\"code\" data-complete=\"{complete}\">{}</pre>\n</details>\n</section>\n",
        esc(&raw)
    );
}

/// The Run section's frames table: the first [`FRAME_ROWS`] frames with their causes.
fn frames_table(
    h: &mut String,
    opened: &OpenedStateDir,
    snap: &ReplaySnapshot,
    whys: &[Option<Why>],
) {
    let labels = LabelMap::new(&opened.labels, !opened.labels.is_empty());
    let label = |id: &str| labels.label(id);
    let shown = snap.frames.len().min(FRAME_ROWS);
    let _ = write!(
        h,
        "<details open><summary>frames · {}</summary>\n<table class=\"frames\"><thead><tr><th>#</th><th>node</th><th>status</th><th>wake</th><th>moved</th><th>fresh</th><th>reused</th><th>woke</th><th>why</th></tr></thead><tbody>\n",
        snap.frames.len()
    );
    for f in &snap.frames[..shown] {
        let woke: Vec<String> = f.woken_subscribers.iter().map(|s| label(s)).collect();
        let why = whys.get(f.index).and_then(Option::as_ref);
        let _ = writeln!(
            h,
            "<tr class=\"st-{st}\"><td>{}</td><td title=\"{}\">{}</td><td>{st}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            f.index,
            esc(&f.node),
            esc(&label(&f.node)),
            f.wake_source.as_str(),
            esc(&f.moved_facets.join(", ")),
            f.cost.fresh,
            f.cost.reused,
            esc(&woke.join(", ")),
            esc(why.map_or("", |w| w.text.as_str())),
            st = f.status.as_str(),
        );
    }
    h.push_str("</tbody></table>\n");
    if snap.frames.len() > shown {
        let _ = writeln!(
            h,
            "<p class=\"note\">… {} more frames — the replay above shows every frame.</p>",
            snap.frames.len() - shown
        );
    }
}

fn outputs_section(h: &mut String, outs: &[NodeWorldModelView]) {
    h.push_str("<section id=\"outputs\" class=\"report-section\">\n<h2>Outputs</h2>\n");
    if outs.is_empty() {
        h.push_str(
            "<p class=\"note\">No stored world model for any node's last rendered version.</p>\n",
        );
    }
    for v in outs {
        let _ = writeln!(
            h,
            "<details class=\"output\"><summary>{} <span class=\"ver\">{}</span> · {} files</summary>",
            esc(&v.node),
            esc(&v.version),
            v.files.len()
        );
        for f in &v.files {
            let _ = writeln!(
                h,
                "<div class=\"filehead\"><span>{}</span><span class=\"sz\">{} B</span></div>",
                esc(&f.path),
                f.bytes
            );
            match &f.text {
                None if f.bytes > FILE_CAP => {
                    let _ = writeln!(
                        h,
                        "<p class=\"note\">larger than {} KiB — not embedded</p>",
                        FILE_CAP >> 10
                    );
                }
                None => h.push_str("<p class=\"note\">binary file</p>\n"),
                Some(t) if f.path.to_ascii_lowercase().ends_with(".html") => {
                    let _ = writeln!(
                        h,
                        "<iframe class=\"preview\" sandbox=\"\" srcdoc=\"{}\" title=\"{}\"></iframe>\n<button type=\"button\" class=\"open-tab\">open in tab</button>",
                        esc(t),
                        esc(&f.path)
                    );
                }
                Some(t) => {
                    let _ = writeln!(h, "<pre class=\"code\">{}</pre>", esc(t));
                }
            }
        }
        h.push_str("</details>\n");
    }
    h.push_str("</section>\n");
}

fn contract_section(h: &mut String, sources: &[SourceFile]) {
    h.push_str("<section id=\"contract\" class=\"report-section\">\n<h2>Contract</h2>\n");
    if sources.is_empty() {
        h.push_str("<p class=\"note\">No .prose.md source embedded — pass --source &lt;file|dir&gt;.</p>\n");
    }
    for s in sources {
        let _ = write!(
            h,
            "<details open class=\"source\"><summary>{}</summary>\n<pre class=\"code\">{}</pre>\n</details>\n",
            esc(&s.path),
            esc(&s.text)
        );
    }
    h.push_str("</section>\n");
}

/// Writes the report next to `path` and renames it into place (VIEWER.md §2.9 step 4): a
/// temporary file in the same directory, flushed with `fsync`, then `rename`. Without `force`
/// an existing `path` is refused with `AlreadyExists`.
pub(crate) fn write_report(path: &Path, html: &str, force: bool) -> std::io::Result<()> {
    use std::io::Write;
    if !force && std::fs::symlink_metadata(path).is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "file exists",
        ));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report.html".into());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(html.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The `--export` arguments of the command line.
#[derive(Clone, Debug)]
pub(crate) struct ExportArgs {
    /// `<file.html>`, as typed.
    pub file: PathBuf,
    /// `--force`.
    pub force: bool,
    /// `--title`.
    pub title: Option<String>,
    /// `--source`.
    pub source: Option<PathBuf>,
}

/// VIEWER.md §2.9 as the CLI runs it, after the state-dir checks: refuse an existing file
/// without `--force`, open, build, write (temp + rename), print the summary line. Returns the
/// exit code: 0 when written and every chain verifies, 1 when written with a chain failure
/// (the file carries the verdict) or on any error.
pub(crate) fn run_cli(
    opened: Result<OpenedStateDir, crate::replay::OpenError>,
    shown: &str,
    a: &ExportArgs,
    io: &mut crate::devtools::cli::Io<'_>,
) -> u8 {
    let file = a.file.display().to_string();
    if !a.force && std::fs::symlink_metadata(&a.file).is_ok() {
        io.err(&format!(
            "error: {file} already exists — refusing to overwrite.\n  re-run with --force to overwrite it.\n"
        ));
        return 1;
    }
    let opened = match opened {
        Ok(o) => o,
        Err(e) => {
            io.err(&format!(
                "reactor-devtools --export: cannot read state-dir \"{shown}\": {e}\n"
            ));
            return 1;
        }
    };
    if let Some(note) = opened.torn_note() {
        io.err(&format!("{note}\n"));
    }
    let opts = ExportOptions {
        title: a.title.clone(),
        source: a.source.clone(),
    };
    let (html, (nodes, edges, receipts, ok)) = match build_report(&opened, &opts) {
        Ok(r) => r,
        Err(e) => {
            io.err(&format!("error: {e}\n"));
            return 1;
        }
    };
    if let Err(e) = write_report(&a.file, &html, true) {
        io.err(&format!("error: cannot write {file}: {e}\n"));
        return 1;
    }
    io.out(&format!(
        "reactor-devtools: wrote {file} ({nodes} nodes · {edges} edges · {receipts} receipts · {})\n{}",
        if ok { "chain ✓ verified" } else { "chain ✗ TAMPERED" },
        if ok {
            ""
        } else {
            "CHAIN-VERIFY FAILED — the export carries the tamper verdict.\n"
        }
    ));
    if ok { 0 } else { 1 }
}

#[cfg(test)]
#[path = "export_tests.rs"]
mod tests;
