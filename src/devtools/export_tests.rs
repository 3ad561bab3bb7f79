//! The `--export` report: escaping of hostile names, outputs and sources, the inline scripts and
//! their CSP hashes, sources, titles and the temp-and-rename write (VIEWER.md §2.9, §8.18).

use super::*;
use crate::format::opwm;
use crate::format::receipt::{Cost, Fingerprints, Receipt, Status, Wake, WakeSource};
use crate::replay::open::{OpenStateDirOptions, open_state_dir};
use crate::store::ledger::Ledger;
use crate::store::worldmodel::WorldModelStore;

const EVIL: &str = "evil</script><script>alert(1)</script><!--x";

fn receipt(node: &str, version: &str, inputs: Vec<String>, source: WakeSource) -> Receipt {
    Receipt {
        node: node.into(),
        contract_fingerprint: format!("contract:{node}"),
        status: Status::Rendered,
        wake: Wake::new(source),
        input_fingerprints: inputs,
        fingerprints: Fingerprints::atomic(version),
        semantic_diff: Default::default(),
        prev: None,
        cost: Cost {
            provider: "p".into(),
            model: "m".into(),
            fresh: 100,
            reused: 5,
            surprise_cause: source,
        },
        content_hash: String::new(),
    }
}

/// A state directory with a hostile node id and label, a hostile `.html` output and a text
/// output, and a two-node topology.
fn hostile_state_dir(root: &Path) -> OpenedStateDir {
    let store = WorldModelStore::new(root);
    let html = format!("<h1>{EVIL}</h1><script>parent.x=1</script>");
    let tree = vec![
        ("index.html".to_string(), html.into_bytes()),
        (
            "notes.txt".to_string(),
            format!("a & b {EVIL}").into_bytes(),
        ),
    ];
    let artifact = opwm::encode(tree).unwrap();
    let version = crate::format::address::address(&artifact);
    store
        .commit(EVIL, &artifact, &Fingerprints::atomic(version.clone()))
        .unwrap();
    std::fs::create_dir_all(root.join("compile")).unwrap();
    let topology = serde_json::json!({
        "nodes": [{"node": EVIL}, {"node": "sink"}],
        "edges": [{"producer": EVIL, "subscriber": "sink", "facet": "@atomic"}],
        "entry_points": [EVIL],
        "acyclic": true,
    });
    std::fs::write(root.join("compile/topology.json"), topology.to_string()).unwrap();
    std::fs::write(
        root.join("compile/labels.json"),
        serde_json::json!({ EVIL: format!("label {EVIL}") }).to_string(),
    )
    .unwrap();
    let (mut l, _) = Ledger::open(root).unwrap();
    l.append(receipt(EVIL, &version, vec![], WakeSource::External))
        .unwrap();
    l.append(receipt(
        "sink",
        "s1",
        vec![version.clone()],
        WakeSource::Input,
    ))
    .unwrap();
    l.append(receipt(
        "sink",
        "s2",
        vec!["other".into()],
        WakeSource::Input,
    ))
    .unwrap();
    open_state_dir(root, &OpenStateDirOptions::default()).unwrap()
}

/// The inline `<script>` bodies (no attributes) of a report, in order (every script element
/// opens at the start of a line).
fn inline_scripts(html: &str) -> Vec<&str> {
    html.split("</script>")
        .filter_map(|chunk| chunk.rfind("\n<script>").map(|k| &chunk[k + 9..]))
        .collect()
}

/// The report without its script elements (every one opens at the start of a line).
fn outside_scripts(html: &str) -> String {
    html.split("</script>")
        .map(|chunk| match chunk.rfind("\n<script") {
            Some(k) => &chunk[..k],
            None => chunk,
        })
        .collect()
}

#[test]
fn escaping_helpers() {
    assert_eq!(
        esc(r#"<a href="x">&'"#),
        "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
    );
    let j = script_json(br#"{"a":"</script><!--"}"#);
    assert_eq!(j, r#"{"a":"<\/script>\u003c!--"}"#);
    let back: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(back["a"], "</script><!--");
}

#[test]
fn a_hostile_ledger_exports_escaped_with_only_its_own_scripts() {
    let d = tempfile::tempdir().unwrap();
    let opened = hostile_state_dir(d.path());
    let html = export_report(&opened, &ExportOptions::default()).unwrap();
    // The inlined scripts can neither end their element nor open an escaped one.
    for js in [APP_JS, FRAMES_JS, REPORT_JS] {
        assert!(!js.to_ascii_lowercase().contains("</script") && !js.contains("<!--"));
    }
    // Exactly three inline scripts and three JSON blocks close: no ledger text ended one.
    assert_eq!(html.matches("</script>").count(), 6, "script ends");
    let markup = outside_scripts(&html);
    assert!(
        !markup.contains("<img") && !markup.contains("<h1>evil") && !markup.contains("<script")
    );
    assert!(html.contains("&lt;/script&gt;&lt;script&gt;alert(1)"));
    // The CSP allows exactly the three inline scripts, by their hashes.
    let scripts = inline_scripts(&html);
    assert_eq!(scripts.len(), 3);
    let csp = export_csp();
    for s in &scripts {
        assert!(csp.contains(&csp_hash(s)), "{}", &s[..40]);
    }
    assert!(html.contains(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        esc(&csp)
    )));
    assert!(csp.starts_with("default-src 'none'; script-src 'sha256-"));
    // No resource is loaded from anywhere: the only URLs are the SVG namespace.
    for bad in [
        "src=\"http",
        "href=\"http",
        "url(http",
        "@import",
        "src=\"//",
        "href=\"//",
    ] {
        assert!(!html.contains(bad), "{bad}");
    }
    let urls = html.matches("http://").count() + html.matches("https://").count();
    assert_eq!(urls, html.matches("http://www.w3.org/2000/svg").count());
    // The embedded snapshot reads back with each frame's cause.
    let json = html
        .split("<script type=\"application/json\" id=\"snapshot\">")
        .nth(1)
        .unwrap()
        .split("</script>")
        .next()
        .unwrap();
    let snap: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(snap["frames"][0]["node"], EVIL);
    assert_eq!(
        snap["frames"][0]["why"]["causes"],
        serde_json::json!(["first"])
    );
    assert_eq!(
        snap["frames"][2]["why"]["causes"],
        serde_json::json!(["inputs"])
    );
    assert_eq!(snap["frames"][2]["why"]["inputs"][0]["producer"], EVIL);
    assert_eq!(snap["frames"][2]["why"]["inputs"][0]["frame"], 0);
    assert_eq!(snap["chainVerify"]["ok"], true);
    // The .html output is previewed in a sandboxed srcdoc iframe, escaped; the text one escaped.
    assert!(
        html.contains(
            "<iframe class=\"preview\" sandbox=\"\" srcdoc=\"&lt;h1&gt;evil&lt;/script&gt;"
        )
    );
    assert!(html.contains("<pre class=\"code\">a &amp; b evil&lt;/script&gt;"));
    assert!(html.contains("<button type=\"button\" class=\"open-tab\">open in tab</button>"));
    // The world model is embedded for the inspector (text files without base64).
    let outs = html
        .split("id=\"snapshot-outputs\">")
        .nth(1)
        .unwrap()
        .split("</script>")
        .next()
        .unwrap();
    let outs: serde_json::Value = serde_json::from_str(outs).unwrap();
    let view = outs[EVIL].as_object().unwrap().values().next().unwrap();
    assert_eq!(view["files"][0]["path"], "index.html");
    assert_eq!(view["files"][0]["base64"], "");
    // Header: the default title, counts and verdict.
    let title = format!("Reactor run — {}", d.path().display());
    assert!(html.contains(&format!("<title>{}</title>", esc(&title))));
    assert!(html.contains(
        "<div id=\"report-summary\">2 nodes · 1 edges · 3 receipts — rendered 3 · skipped 0 · failed 0 — fresh 300 tokens</div>"
    ));
    assert!(html.contains("<span id=\"report-verdict\" class=\"pill ok\">chain ✓ verified</span>"));
    assert!(html.contains("No .prose.md source embedded — pass --source &lt;file|dir&gt;."));
}

#[test]
fn sources_are_collected_in_order_and_an_empty_source_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let opened = hostile_state_dir(&d.path().join("state"));
    let src = d.path().join("contracts");
    std::fs::create_dir_all(src.join("src")).unwrap();
    for (p, t) in [
        ("b.prose.md", "B"),
        ("src/a.prose.md", "A"),
        ("index.prose.md", "I"),
        ("src/index.prose.md", "SI"),
        ("notes.md", "not prose"),
        ("Z.prose.md", "Z"),
    ] {
        std::fs::write(src.join(p), t).unwrap();
    }
    let got = collect_sources(Some(&src), &opened).unwrap();
    let paths: Vec<&str> = got.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "index.prose.md",
            "src/index.prose.md",
            "Z.prose.md",
            "b.prose.md",
            "src/a.prose.md"
        ]
    );
    let one = collect_sources(Some(&src.join("b.prose.md")), &opened).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].text, "B");
    let empty = d.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    for p in [empty.clone(), d.path().join("missing")] {
        let e = collect_sources(Some(&p), &opened).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("--source {} contains no .prose.md files", p.display())
        );
    }
    // Without --source: root.prose.md and sources/*.prose.md inside the state directory.
    let root = d.path().join("state");
    std::fs::write(root.join("root.prose.md"), "# root <b>").unwrap();
    std::fs::create_dir_all(root.join("sources")).unwrap();
    std::fs::write(root.join("sources/x.prose.md"), "x").unwrap();
    let got = collect_sources(None, &opened).unwrap();
    let paths: Vec<&str> = got.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["root.prose.md", "sources/x.prose.md"]);
    let html = export_report(
        &opened,
        &ExportOptions {
            title: Some("T <i>".into()),
            source: None,
        },
    )
    .unwrap();
    assert!(html.contains("<pre class=\"code\"># root &lt;b&gt;</pre>"));
    assert!(html.contains("<title>T &lt;i&gt;</title>"));
}

#[test]
fn titles_follow_the_option_then_the_beats() {
    let d = tempfile::tempdir().unwrap();
    let mut opened = hostile_state_dir(d.path());
    assert_eq!(report_title(&opened, Some("x")), "x");
    opened.beats = Some(crate::replay::open::BeatsMap {
        scenario: String::new(),
        title: "Beats title".into(),
        beats: Vec::new(),
    });
    assert_eq!(report_title(&opened, None), "Beats title");
    opened.beats.as_mut().unwrap().title.clear();
    assert_eq!(
        report_title(&opened, None),
        format!("Reactor run — {}", d.path().display())
    );
}

#[test]
fn reports_are_written_by_temp_and_rename() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("r.html");
    write_report(&f, "one", false).unwrap();
    let e = write_report(&f, "two", false).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "one");
    write_report(&f, "two", true).unwrap();
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "two");
    let names: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["r.html"], "no temporary file is left");
    assert!(write_report(&d.path().join("missing/r.html"), "x", true).is_err());
    // A directory in the way is not replaced.
    std::fs::create_dir(d.path().join("dir.html")).unwrap();
    assert!(write_report(&d.path().join("dir.html"), "x", true).is_err());
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 2);
}
