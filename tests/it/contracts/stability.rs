//! Fingerprints are stable across processes (a child probe run by name).

use super::*;

// ---------------------------------------------------------------------------------------------
// Stability across processes

/// The probe project: several contracts whose parsing touches every code path that could hide
/// per-process state (hash maps for duplicate detection, sorting, canonical JSON).
fn write_probe_project(root: &Path) {
    write(root, "node.prose.md", BASE);
    write(root, "lib/other.prose.md", OTHER);
    write(
        root,
        "z/ünïcode.prose.md",
        "---\nname: \"ünïcode \u{1F600}\"\n---\n### Maintains\nm\n#### b\n#### a\n#### \u{E000}\n",
    );
    write(
        root,
        "gw.prose.md",
        "---\nkind: gateway\n---\n### Maintains\nall\n",
    );
}

fn probe_lines(dir: &Path) -> Vec<String> {
    let set = load(dir).unwrap();
    let mut lines: Vec<String> = set
        .contracts()
        .iter()
        .map(|c| format!("PROBE {} {}", c.id, c.fingerprint()))
        .collect();
    lines.push(format!("PROBE-SET {}", set.fingerprint()));
    lines.push(format!(
        "PROBE-EVIDENCE {}",
        reactor::format::address::address(render_evidence(&set).as_bytes())
    ));
    lines
}

/// Run only as a child of `fingerprints_are_stable_across_processes`.
#[test]
#[ignore = "child probe of fingerprints_are_stable_across_processes"]
fn fingerprint_probe_child() {
    let dir = std::env::var("REACTOR_CONTRACT_PROBE_DIR").expect("probe dir");
    for line in probe_lines(Path::new(&dir)) {
        println!("{line}");
    }
}

#[test]
fn fingerprints_are_stable_across_processes() {
    let t = tempfile::tempdir().unwrap();
    write_probe_project(t.path());
    let mine = probe_lines(t.path());
    assert_eq!(mine.len(), 4 + 2);

    let exe = std::env::current_exe().unwrap();
    let mut children = Vec::new();
    for _ in 0..2 {
        let out = Command::new(&exe)
            .args([
                "contracts::stability::fingerprint_probe_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("REACTOR_CONTRACT_PROBE_DIR", t.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<String> = stdout
            .lines()
            // The harness may print `test … ... ` on the same line as the first probe line.
            .filter_map(|l| l.find("PROBE").map(|at| l[at..].to_owned()))
            .collect();
        children.push(lines);
    }
    assert_eq!(children[0], mine);
    assert_eq!(children[1], mine);
}
