//! Read-only views of a state directory for the host's offline verbs (FORMATS.md §2, §12–§15;
//! HOST.md §6–§8): the compiled topology and the compile manifest, the current writer (`.lock`
//! pid and `serve.json`), published world-model pointers, and the world-model integrity check of
//! `receipts verify`. Nothing here creates, locks, repairs or deletes anything, and every read
//! tolerates a writer working next to it (the ledger itself is read by
//! [`crate::replay::ledger`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::format::address::{address, is_content_address};
use crate::format::json::{self, ParseError, Value};
use crate::format::layout::{self, node_segment, segment_node, version_file_name};
use crate::format::opwm;
use crate::format::receipt::{Lenient, SafeCount};
use crate::format::topology::{TopologyFile, TopologyIndex, unwrap_topology};
use crate::store::lock::holder_pid;
use crate::store::source::DiskSource;
use crate::store::worldmodel::{Published, WorldModelReader};

/// Why `compile/topology.json` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TopologyReadError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Present but not valid JSON (FORMATS.md §15.1 rule 2).
    #[error("compile/topology.json is not valid JSON: {}", .0.message())]
    InvalidJson(ParseError),
}

/// A file's bytes; `Ok(None)` when it (or a directory on its path) does not exist.
fn read_if_present(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Reads `compile/topology.json` (envelope or flat, FORMATS.md §15.1). `Ok(None)` when absent
/// or of no recognised shape. Linear in the file's size.
///
/// Errors: [`TopologyReadError`] — unreadable, or not valid JSON.
pub fn read_topology(state_dir: &Path) -> Result<Option<TopologyFile>, TopologyReadError> {
    let path = state_dir
        .join(layout::COMPILE_DIR)
        .join(layout::TOPOLOGY_FILE);
    let Some(bytes) = read_if_present(&path).map_err(|e| TopologyReadError::Io {
        path: path.display().to_string(),
        source: e,
    })?
    else {
        return Ok(None);
    };
    let v = json::parse(&bytes).map_err(TopologyReadError::InvalidJson)?;
    Ok(unwrap_topology(&v))
}

/// `{fresh, reused}` of the compile manifest's `cost.tokens`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManifestTokens {
    /// Fresh tokens.
    pub fresh: u64,
    /// Reused tokens.
    pub reused: u64,
}

/// The readable members of `compile/manifest.json` (FORMATS.md §15.4, HOST.md §6.2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// `contract_set_fingerprint`.
    pub contract_set_fingerprint: Option<String>,
    /// `sdk_version`.
    pub sdk_version: Option<String>,
    /// `model`: the compile model id.
    pub model: Option<String>,
    /// `cost.provider`.
    pub provider: Option<String>,
    /// `cost.tokens` (0 when unreadable).
    pub cost: ManifestTokens,
    /// `nodes`.
    pub nodes: Option<u64>,
    /// `edges`.
    pub edges: Option<u64>,
    /// `compiled_at`.
    pub compiled_at: Option<String>,
}

/// What `compile/manifest.json` holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ManifestRead {
    /// No manifest (never compiled, or a replay fixture).
    Absent,
    /// Present but not JSON or not an object (the cache is stale: `manifest unreadable`).
    Unreadable(String),
    /// A manifest.
    Present(Manifest),
}

/// `compile/manifest.json` as [`read_manifest`] reads it: every member lenient.
#[derive(serde::Deserialize)]
struct ManifestWire {
    contract_set_fingerprint: Lenient<String>,
    sdk_version: Lenient<String>,
    model: Lenient<String>,
    cost: Lenient<ManifestCostWire>,
    nodes: Lenient<SafeCount>,
    edges: Lenient<SafeCount>,
    compiled_at: Lenient<String>,
}

#[derive(serde::Deserialize)]
struct ManifestCostWire {
    provider: Lenient<String>,
    tokens: Lenient<ManifestTokensWire>,
}

#[derive(serde::Deserialize)]
struct ManifestTokensWire {
    fresh: Lenient<SafeCount>,
    reused: Lenient<SafeCount>,
}

/// Reads `compile/manifest.json` leniently.
pub(crate) fn read_manifest(state_dir: &Path) -> ManifestRead {
    let path = state_dir
        .join(layout::COMPILE_DIR)
        .join(layout::MANIFEST_FILE);
    let bytes = match read_if_present(&path) {
        Ok(Some(b)) => b,
        Ok(None) => return ManifestRead::Absent,
        Err(e) => return ManifestRead::Unreadable(e.to_string()),
    };
    let v = match json::parse(&bytes) {
        Ok(v) => v,
        Err(e) => return ManifestRead::Unreadable(format!("not valid JSON: {}", e.message())),
    };
    if v.as_object().is_none() {
        return ManifestRead::Unreadable(format!("expected an object, got {}", v.type_name()));
    }
    let w: ManifestWire = match json::from_value(&v) {
        Ok(w) => w,
        Err(e) => return ManifestRead::Unreadable(e.to_string()),
    };
    let count = |n: Lenient<SafeCount>| n.0.map(|n| n.0);
    let (provider, tokens) = w
        .cost
        .0
        .map_or((None, None), |c| (c.provider.0, c.tokens.0));
    let (fresh, reused) = tokens.map_or((None, None), |t| (count(t.fresh), count(t.reused)));
    ManifestRead::Present(Manifest {
        contract_set_fingerprint: w.contract_set_fingerprint.0,
        sdk_version: w.sdk_version.0,
        model: w.model.0,
        provider,
        cost: ManifestTokens {
            fresh: fresh.unwrap_or(0),
            reused: reused.unwrap_or(0),
        },
        nodes: count(w.nodes),
        edges: count(w.edges),
        compiled_at: w.compiled_at.0,
    })
}

/// The current writer of a state directory (HOST.md §7.1; FORMATS.md §12).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writer {
    /// The pid recorded in `.lock`.
    pub pid: u32,
    /// True when `serve.json` names the same pid (a daemon).
    pub daemon: bool,
    /// The daemon's URL, when it has an HTTP surface.
    pub url: Option<String>,
}

impl Writer {
    /// `pid <pid>` or `reactor serve (pid <pid>) at <url>` (HOST.md §8.2 `writer`).
    pub fn describe(&self) -> String {
        match (&self.url, self.daemon) {
            (Some(u), true) => format!("reactor serve (pid {}) at {u}", self.pid),
            (None, true) => format!("reactor serve (pid {}) without an HTTP surface", self.pid),
            _ => format!("pid {}", self.pid),
        }
    }
}

/// True when a process with this pid exists (Linux: `/proc/<pid>`; elsewhere assumed alive).
pub(crate) fn pid_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    let proc_root = Path::new("/proc");
    if !proc_root.is_dir() {
        return true;
    }
    proc_root.join(pid.to_string()).exists()
}

/// The writer named by `.lock` when its process is alive, with the daemon details from
/// `serve.json` when it names the same pid. Reads only; never takes or tests the lock.
pub(crate) fn current_writer(state_dir: &Path) -> Option<Writer> {
    let pid = holder_pid(state_dir)?;
    if !pid_alive(pid) {
        return None;
    }
    let serve = std::fs::read(state_dir.join(layout::SERVE_FILE))
        .ok()
        .and_then(|b| json::parse(&b).ok());
    let (daemon, url) = match serve {
        Some(v) if v.get("pid").and_then(Value::as_f64) == Some(f64::from(pid)) => (
            true,
            v.get("url").and_then(Value::as_str).map(str::to_string),
        ),
        _ => (false, None),
    };
    Some(Writer { pid, daemon, url })
}

/// A node's `published.json` (through the world-model reader, with the singular fallback).
pub fn published(state_dir: &Path, node: &str) -> Option<Published> {
    let src = DiskSource::new(state_dir);
    WorldModelReader::open(&src)?.published(node)
}

/// The world-model store directory: `world-models/`, else `world-model/`, else `None`.
pub(crate) fn world_models_dir(state_dir: &Path) -> Option<PathBuf> {
    [layout::WORLD_MODELS_DIR, layout::WORLD_MODEL_DIR_SINGULAR]
        .iter()
        .map(|d| state_dir.join(d))
        .find(|p| p.is_dir())
}

/// What a version file of a node holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum VersionFile {
    /// Decoded, with its number of files.
    Files(usize),
    /// Absent.
    Missing,
    /// Present but not a valid OPWM1 artifact.
    Invalid(String),
}

/// Looks up one version file of a node.
pub(crate) fn version_file(state_dir: &Path, node: &str, version: &str) -> VersionFile {
    let (Some(dir), Some(name)) = (world_models_dir(state_dir), version_file_name(version)) else {
        return VersionFile::Missing;
    };
    let path = dir
        .join(node_segment(node))
        .join(layout::VERSIONS_DIR)
        .join(name);
    match std::fs::read(&path) {
        Ok(b) => match opwm::decode(&b) {
            Ok(tree) => VersionFile::Files(tree.len()),
            Err(e) => VersionFile::Invalid(e.to_string()),
        },
        Err(_) => VersionFile::Missing,
    }
}

/// The declared facets of a node (never `@atomic`): from its compile artifact
/// (`compile/nodes/<hex>.json`, `canonicalizer.facets[].facet`) when present; otherwise the
/// facets its outbound edges consume (edge order); otherwise the facets of its published
/// fingerprint map. Costs the node's own edges (through the index), not the topology's.
pub fn maintains(state_dir: &Path, index: &TopologyIndex<'_>, node: &str) -> Vec<String> {
    let artifact = state_dir
        .join(layout::COMPILE_DIR)
        .join(layout::COMPILE_NODES_DIR)
        .join(format!("{}.json", node_segment(node)));
    if let Some(v) = std::fs::read(&artifact)
        .ok()
        .and_then(|b| json::parse(&b).ok())
        && let Some(facets) = v
            .get("canonicalizer")
            .and_then(|c| c.get("facets"))
            .and_then(Value::as_array)
    {
        return facets
            .iter()
            .filter_map(|f| f.get("facet").and_then(Value::as_str))
            .filter(|f| *f != "@atomic")
            .map(str::to_string)
            .collect();
    }
    let mut out = index.consumed_facets(node);
    if out.is_empty()
        && let Some(p) = published(state_dir, node)
    {
        out = p
            .fingerprints
            .facets()
            .filter(|f| *f != "@atomic")
            .map(str::to_string)
            .collect();
    }
    out
}

/// The phantom ingress producer of an entry point: the producer of an edge into it that is not
/// a topology node (reference fixtures), else `<gateway>::ingress`. Costs the gateway's inbound
/// edges.
pub(crate) fn ingress_of(index: &TopologyIndex<'_>, gateway: &str) -> String {
    index
        .inbound(gateway)
        .find(|e| !index.has_node(&e.producer))
        .map(|e| e.producer.clone())
        .unwrap_or_else(|| crate::format::topology::ingress_node(gateway))
}

/// The world-model integrity verdict of `receipts verify`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorldModelCheck {
    /// Version files examined.
    pub versions: usize,
    /// Every problem found, one line each.
    pub errors: Vec<String>,
}

impl WorldModelCheck {
    /// True when nothing is wrong.
    pub fn ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// The entries of `dir` sorted by name (temporary files left out). A directory that cannot be
/// listed is an error: the world-model check must not read it as empty.
fn sorted_entries(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let rd = std::fs::read_dir(dir)?;
    let mut v: Vec<(String, PathBuf)> = rd
        .filter_map(Result::ok)
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .filter(|(n, _)| !layout::is_temporary_name(n))
        .collect();
    v.sort();
    Ok(v)
}

/// What one version file is.
enum VersionCheck {
    /// Decodes and hashes to its name.
    Valid,
    /// Not there.
    Missing,
    /// There but wrong (the error line).
    Invalid(String),
}

/// Checks `versions/<name>` of a node (`expected` is the version its name encodes).
fn check_version_file(node: &str, name: &str, path: &Path, expected: &str) -> VersionCheck {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return VersionCheck::Missing,
        Err(e) => {
            return VersionCheck::Invalid(format!("{node}: versions/{name} cannot be read: {e}"));
        }
    };
    if let Err(e) = opwm::decode(&bytes) {
        return VersionCheck::Invalid(format!(
            "{node}: versions/{name} does not decode as OPWM1: {e}"
        ));
    }
    let actual = address(&bytes);
    if actual != expected {
        return VersionCheck::Invalid(format!(
            "{node}: versions/{name} hashes to {actual}, not to its name"
        ));
    }
    VersionCheck::Valid
}

/// Binds the world-model store (HOST.md §8.11): every `versions/sha256_<hex>.bin` must decode as
/// OPWM1 and hash to its name; every `published.json` must parse and point to an existing
/// version. Directories whose names are not hex-encoded node ids, and files not named like
/// versions, are ignored (unknown entries, FORMATS.md §2). Linear in the store's files.
///
/// Safe next to a writer: a writer commits the version file before the `published.json` that
/// names it (FORMATS.md §14.8), so each node's `published.json` is read **before** its
/// `versions/` is listed — a version a concurrent commit adds is then either not yet named or
/// already listed — and a named version the listing lacks is looked up once more by name
/// before it is reported missing.
pub fn check_world_models(state_dir: &Path) -> WorldModelCheck {
    let mut out = WorldModelCheck::default();
    let Some(root) = world_models_dir(state_dir) else {
        return out;
    };
    let nodes = match sorted_entries(&root) {
        Ok(v) => v,
        Err(e) => {
            out.errors
                .push(format!("{} cannot be listed: {e}", root.display()));
            return out;
        }
    };
    for (seg, node_dir) in nodes {
        if !node_dir.is_dir() {
            continue;
        }
        let Some(node) = segment_node(&seg) else {
            continue;
        };
        // The pointer first (see above), then the versions.
        let pointer = std::fs::read(node_dir.join(layout::PUBLISHED_FILE));
        let versions_dir = node_dir.join(layout::VERSIONS_DIR);
        let mut present: HashSet<String> = HashSet::new();
        let mut invalid: HashSet<String> = HashSet::new();
        let versions = match sorted_entries(&versions_dir) {
            Ok(v) => v,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                out.errors
                    .push(format!("{node}: versions/ cannot be listed: {e}"));
                Vec::new()
            }
        };
        for (name, path) in versions {
            let Some(hexpart) = name
                .strip_prefix("sha256_")
                .and_then(|r| r.strip_suffix(".bin"))
            else {
                continue;
            };
            let expected = format!("sha256:{hexpart}");
            out.versions += 1;
            if !is_content_address(&expected) {
                out.errors.push(format!(
                    "{node}: versions/{name} is not named sha256_<64 lowercase hex>.bin"
                ));
                continue;
            }
            match check_version_file(&node, &name, &path, &expected) {
                VersionCheck::Valid => {
                    present.insert(expected);
                }
                VersionCheck::Invalid(line) => {
                    out.errors.push(line);
                    invalid.insert(expected);
                }
                // Listed, then gone: version files are never deleted by writers; report it.
                VersionCheck::Missing => out.errors.push(format!(
                    "{node}: versions/{name} vanished while it was read"
                )),
            }
        }
        let bytes = match pointer {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                out.errors
                    .push(format!("{node}: published.json cannot be read: {e}"));
                continue;
            }
            Ok(b) => b,
        };
        let Some(p) = Published::parse(&bytes) else {
            out.errors.push(format!(
                "{node}: published.json does not parse (expected {{\"version\": <string>, \"fingerprints\": {{…}}}})"
            ));
            continue;
        };
        if present.contains(&p.version) {
            continue;
        }
        let what = if invalid.contains(&p.version) {
            "an invalid version file"
        } else {
            // Not listed: look it up by name before calling it missing.
            let recheck = version_file_name(&p.version).map(|name| {
                let path = versions_dir.join(&name);
                check_version_file(&node, &name, &path, &p.version)
            });
            match recheck {
                Some(VersionCheck::Valid) => {
                    out.versions += 1;
                    continue;
                }
                Some(VersionCheck::Invalid(line)) => {
                    out.versions += 1;
                    out.errors.push(line);
                    "an invalid version file"
                }
                Some(VersionCheck::Missing) | None => "a version file that is missing",
            }
        };
        out.errors.push(format!(
            "{node}: published.json points to {} ({what})",
            crate::format::sanitize::clip(&p.version, 80)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::receipt::Fingerprints;
    use crate::store::worldmodel::WorldModelStore;

    #[test]
    fn world_model_check_finds_every_problem() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(check_world_models(d.path()), WorldModelCheck::default());
        let store = WorldModelStore::new(d.path());
        let art = opwm::encode(vec![("truth.json".into(), b"{\"a\":1}".to_vec())]).unwrap();
        let v = store
            .commit("n", &art, &Fingerprints::atomic(opwm::version(&art)))
            .unwrap();
        let art2 = opwm::encode(vec![("x".into(), b"2".to_vec())]).unwrap();
        store
            .commit("m", &art2, &Fingerprints::atomic(opwm::version(&art2)))
            .unwrap();
        let c = check_world_models(d.path());
        assert!(c.ok(), "{c:?}");
        assert_eq!(c.versions, 2);
        assert_eq!(version_file(d.path(), "n", &v), VersionFile::Files(1));
        // Corrupt n's version: bad bytes under its name.
        let vpath = d
            .path()
            .join("world-models")
            .join(node_segment("n"))
            .join("versions")
            .join(version_file_name(&v).unwrap());
        std::fs::write(&vpath, b"OPWM1\x01\x00\x00\x00").unwrap();
        let c = check_world_models(d.path());
        assert_eq!(c.errors.len(), 2, "{c:?}");
        assert!(c.errors[0].starts_with("n: versions/sha256_"), "{c:?}");
        assert!(c.errors[0].contains("does not decode as OPWM1"), "{c:?}");
        assert!(c.errors[1].contains("published.json points to"), "{c:?}");
        assert!(c.errors[1].ends_with("(an invalid version file)"), "{c:?}");
        // A valid artifact under the wrong name.
        std::fs::write(&vpath, &art2).unwrap();
        let c = check_world_models(d.path());
        assert!(c.errors[0].contains("hashes to sha256:"), "{c:?}");
        // The version file removed: missing (after the re-check by name).
        std::fs::remove_file(&vpath).unwrap();
        let c = check_world_models(d.path());
        assert_eq!(c.errors.len(), 1, "{c:?}");
        assert!(
            c.errors[0].ends_with("(a version file that is missing)"),
            "{c:?}"
        );
        // A pointer to a version string that is not a content address.
        let p = d
            .path()
            .join("world-models")
            .join(node_segment("m"))
            .join("published.json");
        std::fs::write(&p, br#"{"version":"nope","fingerprints":{}}"#).unwrap();
        let c = check_world_models(d.path());
        assert!(
            c.errors
                .iter()
                .any(|e| e == "m: published.json points to nope (a version file that is missing)"),
            "{c:?}"
        );
        // Unparseable pointer.
        std::fs::write(&p, b"{").unwrap();
        let c = check_world_models(d.path());
        assert!(
            c.errors
                .iter()
                .any(|e| e.starts_with("m: published.json does not parse")),
            "{c:?}"
        );
    }

    /// A writer committing while the check runs never makes a version "missing": the commit
    /// order (version file, then pointer) and the read order (pointer, then versions) agree.
    #[test]
    fn concurrent_commits_are_never_missing() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let d = tempfile::tempdir().unwrap();
        let store = WorldModelStore::new(d.path())
            .with_durability(crate::store::worldmodel::Durability::Deferred);
        let dir = d.path().to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let commits = Arc::new(AtomicU64::new(0));
        let (flag, count) = (stop.clone(), commits.clone());
        let writer = std::thread::spawn(move || {
            let mut i = 0u64;
            while !flag.load(Ordering::SeqCst) {
                let art = opwm::encode(vec![("n.txt".into(), i.to_string().into_bytes())]).unwrap();
                let node = ["a", "b"][(i % 2) as usize];
                store
                    .commit(node, &art, &Fingerprints::atomic(opwm::version(&art)))
                    .unwrap();
                i += 1;
                count.store(i, Ordering::SeqCst);
            }
        });
        let mut checks = 0;
        while checks < 200 || commits.load(Ordering::SeqCst) < 200 {
            let c = check_world_models(&dir);
            assert!(c.ok(), "check {checks}: {:?}", c.errors);
            checks += 1;
        }
        stop.store(true, Ordering::SeqCst);
        writer.join().unwrap();
        let c = check_world_models(&dir);
        assert!(c.ok() && c.versions >= 200, "{c:?}");
    }

    #[test]
    fn manifest_and_writer() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(read_manifest(d.path()), ManifestRead::Absent);
        std::fs::create_dir(d.path().join("compile")).unwrap();
        std::fs::write(d.path().join("compile/manifest.json"), "[1]").unwrap();
        assert_eq!(
            read_manifest(d.path()),
            ManifestRead::Unreadable("expected an object, got array".into())
        );
        std::fs::write(d.path().join("compile/manifest.json"), "{").unwrap();
        assert_eq!(
            read_manifest(d.path()),
            ManifestRead::Unreadable("not valid JSON: unexpected end of JSON input".into())
        );
        std::fs::write(
            d.path().join("compile/manifest.json"),
            r#"{"contract_set_fingerprint":"sha256:x","sdk_version":"reactor-rs/0.2.0","model":"m","cost":{"provider":"openrouter","model":"m","tokens":{"fresh":4210,"reused":-1},"surprise_cause":"self"},"nodes":2,"edges":1.5,"compiled_at":"2026-06-02T18:00:00.000Z"}"#,
        )
        .unwrap();
        let ManifestRead::Present(m) = read_manifest(d.path()) else {
            panic!()
        };
        assert_eq!(
            m.cost,
            ManifestTokens {
                fresh: 4210,
                reused: 0
            }
        );
        assert_eq!((m.nodes, m.edges), (Some(2), None));
        assert_eq!(m.compiled_at.as_deref(), Some("2026-06-02T18:00:00.000Z"));
        assert_eq!(m.provider.as_deref(), Some("openrouter"));
        // Writer: our own pid is alive; a serve.json with the same pid makes it a daemon.
        assert_eq!(current_writer(d.path()), None);
        let me = std::process::id();
        std::fs::write(d.path().join(".lock"), format!("{me}\n")).unwrap();
        let w = current_writer(d.path()).unwrap();
        assert_eq!(w.describe(), format!("pid {me}"));
        std::fs::write(
            d.path().join("serve.json"),
            format!("{{\"pid\": {me}, \"url\": \"http://127.0.0.1:8080/\"}}"),
        )
        .unwrap();
        let w = current_writer(d.path()).unwrap();
        assert_eq!(
            w.describe(),
            format!("reactor serve (pid {me}) at http://127.0.0.1:8080/")
        );
        std::fs::write(d.path().join(".lock"), "999999999\n").unwrap();
        assert_eq!(current_writer(d.path()), None);
    }

    #[test]
    fn topology_reading() {
        let d = tempfile::tempdir().unwrap();
        assert!(read_topology(d.path()).unwrap().is_none());
        std::fs::create_dir(d.path().join("compile")).unwrap();
        let p = d.path().join("compile/topology.json");
        std::fs::write(&p, "{\"nodes\":[").unwrap();
        let e = read_topology(d.path()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "compile/topology.json is not valid JSON: unexpected end of JSON input"
        );
        std::fs::write(&p, "{\"nope\":1}").unwrap();
        assert!(read_topology(d.path()).unwrap().is_none());
        std::fs::write(
            &p,
            r#"{"nodes":[{"node":"g"},{"node":"b"}],"edges":[{"producer":"ingress.g","subscriber":"g","facet":"inbox"},{"producer":"g","subscriber":"b","facet":"f"},{"producer":"g","subscriber":"b","facet":"f"},{"producer":"g","subscriber":"b","facet":"@atomic"}],"entry_points":["g"]}"#,
        )
        .unwrap();
        let t = read_topology(d.path()).unwrap().unwrap();
        let ix = t.topology.index();
        assert_eq!(ingress_of(&ix, "g"), "ingress.g");
        assert_eq!(ingress_of(&ix, "b"), "b::ingress");
        assert_eq!(maintains(d.path(), &ix, "g"), vec!["f".to_string()]);
        assert!(maintains(d.path(), &ix, "b").is_empty());
    }
}
