//! The compile cache under `<state-dir>/compile/` (HOST.md §6, FORMATS.md §15.1, §15.4–§15.6):
//! the key triple, writing (node files, then `topology.json`, then `manifest.json` as the commit
//! point, with fsyncs), the freshness check with its reasons in the order of HOST.md §6.4, and the
//! keyless load that re-lowers every node into a mountable IR.
//!
//! Reading a manifest happens in two stages. The key triple (`contract_set_fingerprint`,
//! `sdk_version`, `model`, strings) is read first and compared; the rest of the manifest
//! (`cost`, counts, `compiled_at`, and the project's `format`, `topology` and `artifacts`) is
//! checked only when the key matches. A manifest written by the reference (which has no
//! `format`, `topology` or `artifacts` and whose `sdk_version` is never `reactor-rs/…`) is
//! therefore reported as `reactor version changed` rather than as unreadable; both are stale.
//!
//! Reads are bounded ([`MAX_CACHE_FILE_BYTES`] per file); nothing here panics on hostile files.

use std::fmt;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::ir::{CompiledIr, CompiledNode, TopologySummary};
use crate::core::canonicalizer::{CanonicalizerSpec, compile_node};
use crate::core::ir::{IngressMode, mount};
use crate::core::postcondition::CompiledPostconditions;
use crate::format::address::hex;
use crate::format::json::{self, JsString, Object, Value};
use crate::format::layout::{
    COMPILE_DIR, COMPILE_NODES_DIR, MANIFEST_FILE, TOPOLOGY_FILE, node_segment,
};
use crate::format::topology::{Topology, unwrap_topology, write_envelope};
use crate::model::TokenCost;
use crate::store::fsutil::{fsync_dir, write_atomic};

/// The `sdk_version` prefix of every cache the project writes.
pub(crate) const SDK_PREFIX: &str = "reactor-rs/";

/// The manifest `format` the project writes and reads.
pub(crate) const MANIFEST_FORMAT: u32 = 1;

/// Largest compile file read, in bytes (64 MiB).
pub(crate) const MAX_CACHE_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The SDK version of the key triple (HOST.md §6.3): `reactor-rs/<crate version>`, plus
/// `+skill.<first 16 hex digits of SHA-256(prompt)>` when `REACTOR_SKILL_PATH` replaced the
/// embedded system prompt with `replaced_prompt`.
pub fn sdk_version(replaced_prompt: Option<&str>) -> String {
    let mut v = format!("{SDK_PREFIX}{}", crate::version::VERSION);
    if let Some(prompt) = replaced_prompt {
        use sha2::{Digest, Sha256};
        let digest = hex(&Sha256::digest(prompt.as_bytes()));
        v.push_str("+skill.");
        v.push_str(&digest[..16]);
    }
    v
}

/// The cache key (HOST.md §6.3): exactly these three strings; cost, render model, temperature
/// and provider are never part of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// RUNTIME.md §2.8 (`sha256:…`).
    pub contract_set_fingerprint: String,
    /// [`sdk_version`].
    pub sdk_version: String,
    /// The resolved `model.compile_model`.
    pub model: String,
}

/// The compile cost (RUNTIME.md §3.2.4): `{provider, model, tokens: {fresh, reused},
/// surprise_cause: "self"}`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CompileCost {
    /// The provider label.
    pub provider: String,
    /// The compile model id.
    pub model: String,
    /// Summed session tokens.
    pub tokens: TokenCost,
}

impl CompileCost {
    /// Always `self`.
    pub(crate) const SURPRISE_CAUSE: &'static str = "self";

    fn to_value(&self) -> Value {
        let mut tokens = Object::new();
        tokens.push_unique("fresh", Value::Number(self.tokens.fresh as f64));
        tokens.push_unique("reused", Value::Number(self.tokens.reused as f64));
        let mut o = Object::new();
        o.push_unique("provider", Value::str(self.provider.clone()));
        o.push_unique("model", Value::str(self.model.clone()));
        o.push_unique("tokens", Value::Object(tokens));
        o.push_unique("surprise_cause", Value::str(Self::SURPRISE_CAUSE));
        Value::Object(o)
    }
}

/// `compile/manifest.json` (FORMATS.md §15.4, HOST.md §6.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// The key triple.
    pub key: CacheKey,
    /// The compile cost.
    pub cost: CompileCost,
    /// Topology node count.
    pub nodes: u64,
    /// Compiled edge count.
    pub edges: u64,
    /// UTC, millisecond precision (`2026-06-02T18:00:00.000Z`).
    pub compiled_at: String,
    /// Always [`MANIFEST_FORMAT`].
    pub format: u32,
    /// `blake3:<64 hex>` of the exact bytes of `topology.json`.
    pub topology: String,
    /// Node id → `blake3:<64 hex>` of its node file, in topology node order.
    pub artifacts: Vec<(String, String)>,
    /// The provider base URL the sessions went to (project addition written after `artifacts`;
    /// not part of the key, HOST.md §6.3). `None` in manifests written before it existed, which
    /// stay readable. The provider label is `cost.provider`.
    pub base_url: Option<String>,
}

impl Manifest {
    /// Pretty JSON + `\n`, keys in the order of FORMATS.md §15.4, numbers as JavaScript prints
    /// them.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut o = Object::new();
        o.push_unique(
            "contract_set_fingerprint",
            Value::str(self.key.contract_set_fingerprint.clone()),
        );
        o.push_unique("sdk_version", Value::str(self.key.sdk_version.clone()));
        o.push_unique("model", Value::str(self.key.model.clone()));
        o.push_unique("cost", self.cost.to_value());
        o.push_unique("nodes", Value::Number(self.nodes as f64));
        o.push_unique("edges", Value::Number(self.edges as f64));
        o.push_unique("compiled_at", Value::str(self.compiled_at.clone()));
        o.push_unique("format", Value::Number(f64::from(self.format)));
        o.push_unique("topology", Value::str(self.topology.clone()));
        let mut artifacts = Object::new();
        for (node, digest) in &self.artifacts {
            artifacts.insert(node.as_str(), Value::str(digest.clone()));
        }
        o.push_unique("artifacts", Value::Object(artifacts));
        if let Some(url) = &self.base_url {
            o.push_unique("base_url", Value::str(url.clone()));
        }
        json::pretty_string(&Value::Object(o)).into_bytes()
    }
}

/// `blake3:` + lowercase hex of the BLAKE3 digest of `bytes`.
pub(crate) fn blake3_digest(bytes: &[u8]) -> String {
    format!("blake3:{}", blake3::hash(bytes).to_hex())
}

/// A timestamp as JavaScript's `toISOString` prints it: `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC,
/// milliseconds truncated); years outside 0–9999 use the six-digit signed form (`+010000`).
pub(crate) fn iso_millis(ts: jiff::Timestamp) -> String {
    let dt = ts.to_zoned(jiff::tz::TimeZone::UTC).datetime();
    let year = i32::from(dt.year());
    let y = if (0..=9999).contains(&year) {
        format!("{year:04}")
    } else if year < 0 {
        format!("-{:06}", -year)
    } else {
        format!("+{year:06}")
    };
    format!(
        "{y}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.subsec_nanosecond() / 1_000_000
    )
}

/// The cache directory `<state-dir>/compile`.
pub fn compile_dir(state_dir: &Path) -> PathBuf {
    state_dir.join(COMPILE_DIR)
}

/// The file name of a node's compile file: `<hex(utf8(id))>.json`.
pub(crate) fn node_file_name(id: &str) -> String {
    format!("{}.json", node_segment(id))
}

/// The state-dir relative name of a node's compile file: `compile/nodes/<hex>.json`.
pub(crate) fn node_file_label(id: &str) -> String {
    format!("{COMPILE_DIR}/{COMPILE_NODES_DIR}/{}", node_file_name(id))
}

fn topology_label() -> String {
    format!("{COMPILE_DIR}/{TOPOLOGY_FILE}")
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

/// A cache write that failed part-way (the manifest is the commit point, so a failure before it
/// leaves a cache that reads as stale, never a mixture).
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct CacheWriteError {
    /// The file or directory.
    pub path: String,
    /// The I/O error.
    #[source]
    pub source: io::Error,
}

fn werr(path: &Path) -> impl FnOnce(io::Error) -> CacheWriteError + '_ {
    move |source| CacheWriteError {
        path: path.display().to_string(),
        source,
    }
}

/// Writes the cache (HOST.md §6.5, FORMATS.md §15.6): every `compile/nodes/<hex>.json`, then
/// `compile/topology.json` (the envelope), then `compile/manifest.json` last, each through a
/// temporary file, fsync and rename; then fsyncs `compile/` and `compile/nodes/`, and removes
/// the files of `compile/nodes/` the new manifest does not list. The caller holds the state-dir
/// lock. Returns the manifest written.
///
/// Errors: [`CacheWriteError`] naming the path that failed.
pub fn write_cache(
    state_dir: &Path,
    ir: &CompiledIr,
    key: &CacheKey,
    cost: &CompileCost,
    base_url: Option<&str>,
    compiled_at: jiff::Timestamp,
) -> Result<Manifest, CacheWriteError> {
    let dir = compile_dir(state_dir);
    let nodes_dir = dir.join(COMPILE_NODES_DIR);
    let existed = dir.is_dir();
    fs::create_dir_all(&nodes_dir).map_err(werr(&nodes_dir))?;
    if !existed {
        fsync_dir(state_dir).map_err(werr(state_dir))?;
    }
    let mut artifacts = Vec::with_capacity(ir.nodes.len());
    for node in &ir.nodes {
        let bytes = node.file_bytes();
        let path = nodes_dir.join(node_file_name(&node.id));
        write_atomic(&path, &bytes).map_err(werr(&path))?;
        artifacts.push((node.id.clone(), blake3_digest(&bytes)));
    }
    let topology = write_envelope(&ir.topology);
    let topo_path = dir.join(TOPOLOGY_FILE);
    write_atomic(&topo_path, topology.as_bytes()).map_err(werr(&topo_path))?;
    let manifest = Manifest {
        key: key.clone(),
        cost: cost.clone(),
        nodes: ir.topology.nodes.len() as u64,
        edges: ir.topology.edges.len() as u64,
        compiled_at: iso_millis(compiled_at),
        format: MANIFEST_FORMAT,
        topology: blake3_digest(topology.as_bytes()),
        artifacts,
        base_url: base_url.map(String::from),
    };
    let manifest_path = dir.join(MANIFEST_FILE);
    write_atomic(&manifest_path, &manifest.to_bytes()).map_err(werr(&manifest_path))?;
    fsync_dir(&dir).map_err(werr(&dir))?;
    fsync_dir(&nodes_dir).map_err(werr(&nodes_dir))?;
    // After the commit point: drop node files the manifest does not list (best effort; readers
    // ignore them anyway).
    let listed: std::collections::HashSet<String> =
        ir.nodes.iter().map(|n| node_file_name(&n.id)).collect();
    if let Ok(entries) = fs::read_dir(&nodes_dir) {
        let mut removed = false;
        for entry in entries.flatten() {
            let is_file = entry
                .file_type()
                .is_ok_and(|t| t.is_file() || t.is_symlink());
            let name = entry.file_name();
            if is_file && !name.to_str().is_some_and(|n| listed.contains(n)) {
                removed |= fs::remove_file(entry.path()).is_ok();
            }
        }
        if removed {
            let _ = fsync_dir(&nodes_dir);
        }
    }
    Ok(manifest)
}

// ---------------------------------------------------------------------------------------------
// Freshness and the keyless load
// ---------------------------------------------------------------------------------------------

/// Why the cache is not fresh (HOST.md §6.4), in the order the check applies them. `Display`
/// gives the exact reason text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StaleReason {
    /// `no compile cache`: `manifest.json` is absent.
    NoCache,
    /// `manifest unreadable: <error>`: not JSON or the wrong shape.
    ManifestUnreadable(String),
    /// `contract set changed`.
    ContractSetChanged,
    /// `reactor version changed` (the SDK version differs).
    VersionChanged,
    /// `compile model changed`.
    ModelChanged,
    /// `cache incomplete: <file> missing` (`compile/topology.json` or a node file).
    Incomplete {
        /// The state-dir relative file name.
        file: String,
    },
    /// `cache corrupt: <file> does not match the manifest` (BLAKE3 mismatch).
    Corrupt {
        /// The state-dir relative file name.
        file: String,
    },
    /// `cache invalid: <detail>`: a flat topology, a node without a contract fingerprint, or a
    /// file that does not load keylessly.
    Invalid(String),
}

impl fmt::Display for StaleReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StaleReason::NoCache => f.write_str("no compile cache"),
            StaleReason::ManifestUnreadable(e) => write!(f, "manifest unreadable: {e}"),
            StaleReason::ContractSetChanged => f.write_str("contract set changed"),
            StaleReason::VersionChanged => f.write_str("reactor version changed"),
            StaleReason::ModelChanged => f.write_str("compile model changed"),
            StaleReason::Incomplete { file } => write!(f, "cache incomplete: {file} missing"),
            StaleReason::Corrupt { file } => {
                write!(f, "cache corrupt: {file} does not match the manifest")
            }
            StaleReason::Invalid(d) => write!(f, "cache invalid: {d}"),
        }
    }
}

impl std::error::Error for StaleReason {}

/// A cache loaded keylessly: its manifest and the re-lowered IR.
#[derive(Clone, Debug)]
pub struct LoadedIr {
    /// The manifest (key triple, cost, counts, `compiled_at`, digests).
    pub manifest: Manifest,
    /// The IR: topology and every node's canonicalizer, postconditions and contract view.
    pub ir: CompiledIr,
}

/// The result of [`freshness`].
#[derive(Clone, Debug)]
pub enum Freshness {
    /// Every check passed; the loaded cache is ready to mount (a cache hit costs no session
    /// tokens).
    Fresh(Box<LoadedIr>),
    /// A manifest exists but the cache cannot be used.
    Stale {
        /// The first applicable reason.
        reason: StaleReason,
        /// The manifest's key triple, when it could be read.
        cached: Option<CacheKey>,
        /// The existing `topology.json` (flat or envelope), when one can be read.
        topology: Option<TopologySummary>,
    },
    /// No `manifest.json` (reason `no compile cache`); `topology` describes a `topology.json`
    /// left there (for example by the reference), when one can be read.
    Absent {
        /// The existing topology, if readable.
        topology: Option<TopologySummary>,
    },
}

impl Freshness {
    /// True for [`Freshness::Fresh`].
    pub fn is_fresh(&self) -> bool {
        matches!(self, Freshness::Fresh(_))
    }

    /// The stale reason (`no compile cache` for an absent cache); `None` when fresh.
    pub fn reason(&self) -> Option<StaleReason> {
        match self {
            Freshness::Fresh(_) => None,
            Freshness::Stale { reason, .. } => Some(reason.clone()),
            Freshness::Absent { .. } => Some(StaleReason::NoCache),
        }
    }
}

/// Reads at most [`MAX_CACHE_FILE_BYTES`]; `Ok(None)` when the file does not exist.
fn read_bounded(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(MAX_CACHE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CACHE_FILE_BYTES {
        return Err(io::Error::other(format!(
            "larger than {MAX_CACHE_FILE_BYTES} bytes"
        )));
    }
    Ok(Some(bytes))
}

fn unreadable(e: impl fmt::Display) -> StaleReason {
    StaleReason::ManifestUnreadable(e.to_string())
}

fn member<'v>(o: &'v Object, key: &str) -> Result<&'v Value, StaleReason> {
    o.get(key)
        .ok_or_else(|| unreadable(format!("missing member '{key}'")))
}

fn string_member(o: &Object, key: &str) -> Result<String, StaleReason> {
    match member(o, key)? {
        Value::String(JsString::Utf8(s)) => Ok(s.clone()),
        _ => Err(unreadable(format!("member '{key}' must be a string"))),
    }
}

fn count_member(o: &Object, key: &str, at: &str) -> Result<u64, StaleReason> {
    match member(o, key)? {
        Value::Number(n) if n.is_finite() && *n >= 0.0 && n.fract() == 0.0 => Ok(*n as u64),
        _ => Err(unreadable(format!(
            "member '{at}{key}' must be a non-negative integer"
        ))),
    }
}

fn is_blake3(s: &str) -> bool {
    s.strip_prefix("blake3:").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Stage 1: the manifest object and its key triple.
fn read_key(bytes: &[u8]) -> Result<(Object, CacheKey), StaleReason> {
    let v =
        json::parse(bytes).map_err(|e| unreadable(format!("not valid JSON: {}", e.message())))?;
    let Value::Object(o) = v else {
        return Err(unreadable("manifest.json must hold a JSON object"));
    };
    let key = CacheKey {
        contract_set_fingerprint: string_member(&o, "contract_set_fingerprint")?,
        sdk_version: string_member(&o, "sdk_version")?,
        model: string_member(&o, "model")?,
    };
    Ok((o, key))
}

/// Stage 2: the rest of a project manifest.
fn read_manifest_rest(o: &Object, key: CacheKey) -> Result<Manifest, StaleReason> {
    let cost = match member(o, "cost")? {
        Value::Object(c) => {
            let tokens = match member(c, "tokens")? {
                Value::Object(t) => TokenCost {
                    fresh: count_member(t, "fresh", "cost.tokens.")?,
                    reused: count_member(t, "reused", "cost.tokens.")?,
                },
                _ => return Err(unreadable("member 'cost.tokens' must be an object")),
            };
            CompileCost {
                provider: string_member(c, "provider")?,
                model: string_member(c, "model")?,
                tokens,
            }
        }
        _ => return Err(unreadable("member 'cost' must be an object")),
    };
    let nodes = count_member(o, "nodes", "")?;
    let edges = count_member(o, "edges", "")?;
    let compiled_at = string_member(o, "compiled_at")?;
    let format = count_member(o, "format", "")?;
    if format != u64::from(MANIFEST_FORMAT) {
        return Err(unreadable(format!(
            "unsupported format {format} (expected {MANIFEST_FORMAT})"
        )));
    }
    let topology = string_member(o, "topology")?;
    if !is_blake3(&topology) {
        return Err(unreadable("member 'topology' must be a blake3 digest"));
    }
    let mut artifacts = Vec::new();
    match member(o, "artifacts")? {
        Value::Object(a) => {
            for (k, v) in a.iter() {
                let (JsString::Utf8(node), Some(d)) = (k, v.as_str()) else {
                    return Err(unreadable(
                        "member 'artifacts' must map node ids to blake3 digests",
                    ));
                };
                if !is_blake3(d) {
                    return Err(unreadable(format!(
                        "artifact of node '{node}' must be a blake3 digest"
                    )));
                }
                artifacts.push((node.clone(), d.to_string()));
            }
        }
        _ => return Err(unreadable("member 'artifacts' must be an object")),
    }
    // Optional: manifests written before it existed have none.
    let base_url = match o.get("base_url") {
        None => None,
        Some(Value::String(JsString::Utf8(s))) => Some(s.clone()),
        Some(_) => return Err(unreadable("member 'base_url' must be a string")),
    };
    Ok(Manifest {
        key,
        cost,
        nodes,
        edges,
        compiled_at,
        format: MANIFEST_FORMAT,
        topology,
        artifacts,
        base_url,
    })
}

/// The existing `topology.json` (flat or envelope), when it can be read.
fn existing_topology(dir: &Path) -> Option<TopologySummary> {
    let bytes = read_bounded(&dir.join(TOPOLOGY_FILE)).ok()??;
    let v = json::parse(&bytes).ok()?;
    unwrap_topology(&v).map(|t| TopologySummary::of(&t.topology))
}

struct Failure {
    reason: StaleReason,
    cached: Option<CacheKey>,
}

fn invalid(detail: impl Into<String>) -> StaleReason {
    StaleReason::Invalid(detail.into())
}

/// Loads and fully checks the cache; `key` (when given) is compared after stage 1.
fn load(state_dir: &Path, key: Option<&CacheKey>) -> Result<LoadedIr, Failure> {
    let dir = compile_dir(state_dir);
    let fail = |reason: StaleReason, cached: Option<&CacheKey>| Failure {
        reason,
        cached: cached.cloned(),
    };
    let bytes = match read_bounded(&dir.join(MANIFEST_FILE)) {
        Ok(Some(b)) => b,
        Ok(None) => return Err(fail(StaleReason::NoCache, None)),
        Err(e) => return Err(fail(unreadable(e), None)),
    };
    let (object, cached) = read_key(&bytes).map_err(|r| fail(r, None))?;
    let c = Some(&cached);
    if let Some(current) = key {
        if cached.contract_set_fingerprint != current.contract_set_fingerprint {
            return Err(fail(StaleReason::ContractSetChanged, c));
        }
        if cached.sdk_version != current.sdk_version {
            return Err(fail(StaleReason::VersionChanged, c));
        }
        if cached.model != current.model {
            return Err(fail(StaleReason::ModelChanged, c));
        }
    }
    let manifest = read_manifest_rest(&object, cached.clone()).map_err(|r| fail(r, c))?;
    // Existence of every file, then every digest.
    let topo_label = topology_label();
    let topo_bytes = match read_bounded(&dir.join(TOPOLOGY_FILE)) {
        Ok(Some(b)) => b,
        Ok(None) => return Err(fail(StaleReason::Incomplete { file: topo_label }, c)),
        Err(e) => return Err(fail(invalid(format!("cannot read {topo_label}: {e}")), c)),
    };
    let nodes_dir = dir.join(COMPILE_NODES_DIR);
    let mut node_bytes = Vec::with_capacity(manifest.artifacts.len());
    for (node, _) in &manifest.artifacts {
        let label = node_file_label(node);
        match read_bounded(&nodes_dir.join(node_file_name(node))) {
            Ok(Some(b)) => node_bytes.push(b),
            Ok(None) => return Err(fail(StaleReason::Incomplete { file: label }, c)),
            Err(e) => return Err(fail(invalid(format!("cannot read {label}: {e}")), c)),
        }
    }
    if blake3_digest(&topo_bytes) != manifest.topology {
        return Err(fail(StaleReason::Corrupt { file: topo_label }, c));
    }
    for ((node, digest), bytes) in manifest.artifacts.iter().zip(&node_bytes) {
        if blake3_digest(bytes) != *digest {
            return Err(fail(
                StaleReason::Corrupt {
                    file: node_file_label(node),
                },
                c,
            ));
        }
    }
    let ir = relower(&manifest, &topo_bytes, &node_bytes).map_err(|r| fail(r, c))?;
    Ok(LoadedIr { manifest, ir })
}

/// The keyless re-lowering of HOST.md §6.6 over files whose digests matched.
fn relower(
    manifest: &Manifest,
    topo_bytes: &[u8],
    node_bytes: &[Vec<u8>],
) -> Result<CompiledIr, StaleReason> {
    let label = topology_label();
    let v = json::parse(topo_bytes)
        .map_err(|e| invalid(format!("{label} is not valid JSON: {}", e.message())))?;
    let file = unwrap_topology(&v).ok_or_else(|| invalid(format!("{label} holds no topology")))?;
    if !file.envelope {
        return Err(invalid(format!(
            "{label} is a flat topology without contract fingerprints"
        )));
    }
    let fingerprints = file.contract_fingerprints.unwrap_or_default();
    let topology: Topology = file.topology;
    if manifest.nodes != topology.nodes.len() as u64
        || manifest.edges != topology.edges.len() as u64
    {
        return Err(invalid(format!(
            "the manifest counts {} nodes and {} edges but {label} holds {} and {}",
            manifest.nodes,
            manifest.edges,
            topology.nodes.len(),
            topology.edges.len()
        )));
    }
    // Indexed once (first entry wins, as a scan would find it): the checks stay linear.
    let node_ids: std::collections::HashSet<&str> =
        topology.nodes.iter().map(|n| n.node.as_str()).collect();
    for (node, _) in &manifest.artifacts {
        if !node_ids.contains(node.as_str()) {
            return Err(invalid(format!(
                "the manifest lists a compile file for '{node}', which is not a topology node"
            )));
        }
    }
    let mut fingerprint_of: std::collections::HashMap<&str, &str> =
        std::collections::HashMap::with_capacity(fingerprints.len());
    for (k, f) in &fingerprints {
        fingerprint_of.entry(k.as_str()).or_insert(f.as_str());
    }
    let mut artifact_of: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(manifest.artifacts.len());
    for (i, (k, _)) in manifest.artifacts.iter().enumerate() {
        artifact_of.entry(k.as_str()).or_insert(i);
    }
    let mut nodes = Vec::with_capacity(topology.nodes.len());
    for tn in &topology.nodes {
        let id = tn.node.as_str();
        let Some(fp) = fingerprint_of.get(id).copied() else {
            return Err(invalid(format!("node '{id}' has no contract fingerprint")));
        };
        let Some(wake_source) = tn.wake_source else {
            return Err(invalid(format!("node '{id}' has no valid wake_source")));
        };
        let Some(&i) = artifact_of.get(id) else {
            return Err(invalid(format!(
                "node '{id}' has no compile file in the manifest"
            )));
        };
        nodes.push(load_node(id, fp, wake_source, &node_bytes[i])?);
    }
    let ir = CompiledIr { topology, nodes };
    mount(&ir.to_ir(), IngressMode::Host).map_err(|e| invalid(format!("{label}: {e}")))?;
    Ok(ir)
}

/// Re-lowers one node file (FORMATS.md §15.5).
fn load_node(
    id: &str,
    fingerprint: &str,
    wake_source: crate::format::receipt::WakeSource,
    bytes: &[u8],
) -> Result<CompiledNode, StaleReason> {
    let label = node_file_label(id);
    let bad = |d: String| invalid(format!("{label}: {d}"));
    let v = json::parse(bytes).map_err(|e| bad(format!("not valid JSON: {}", e.message())))?;
    let Value::Object(o) = v else {
        return Err(bad("must hold a JSON object".into()));
    };
    match o.get("node").and_then(Value::as_str) {
        Some(n) if n == id => {}
        Some(n) => return Err(bad(format!("belongs to node '{n}', not '{id}'"))),
        None => return Err(bad("member 'node' must be a string".into())),
    }
    match o.get("contract_fingerprint").and_then(Value::as_str) {
        Some(f) if f == fingerprint => {}
        Some(_) => {
            return Err(bad(
                "its contract fingerprint differs from the one in topology.json".into(),
            ));
        }
        None => return Err(invalid(format!("node '{id}' has no contract fingerprint"))),
    }
    let spec_v = o
        .get("canonicalizer")
        .ok_or_else(|| bad("member 'canonicalizer' is missing".into()))?;
    let spec = CanonicalizerSpec::from_value(spec_v).map_err(|e| bad(e.to_string()))?;
    if spec.node != id {
        return Err(bad(format!(
            "its canonicalizer spec names node '{}'",
            spec.node
        )));
    }
    let canonicalizer = compile_node(&spec).map_err(|e| bad(e.to_string()))?;
    let post_v = o
        .get("postconditions")
        .ok_or_else(|| bad("member 'postconditions' is missing".into()))?;
    let postconditions = CompiledPostconditions::from_value(id, canonicalizer.facets(), post_v)
        .map_err(|e| bad(e.to_string()))?;
    let contract_view = match o.get("contract_view") {
        Some(Value::Object(view)) => {
            let mut out = Vec::with_capacity(view.len());
            for (k, v) in view.iter() {
                match (k, v.as_str()) {
                    (JsString::Utf8(h), Some(b)) => out.push((h.clone(), b.to_string())),
                    _ => {
                        return Err(bad(
                            "member 'contract_view' must map headings to text".into()
                        ));
                    }
                }
            }
            out
        }
        _ => return Err(bad("member 'contract_view' must be an object".into())),
    };
    Ok(CompiledNode {
        id: id.to_string(),
        contract_fingerprint: fingerprint.to_string(),
        wake_source,
        canonicalizer: Arc::new(canonicalizer),
        postconditions: Arc::new(postconditions),
        contract_view,
    })
}

/// Decides freshness offline and keylessly (HOST.md §6.4, FORMATS.md §15.6): the manifest
/// parses, its key triple equals `key`, `topology.json` and every listed node file exist with
/// their recorded BLAKE3 digests, the envelope names every topology node's contract
/// fingerprint, and every file re-lowers (`compile_node`, postcondition decoding) and the
/// topology mounts. The first failing check gives the reason. Never fails otherwise: a
/// reference-written `compile/` (flat topology, no manifest) reads as absent or stale.
pub fn freshness(state_dir: &Path, key: &CacheKey) -> Freshness {
    match load(state_dir, Some(key)) {
        Ok(loaded) => Freshness::Fresh(Box::new(loaded)),
        Err(Failure { reason, cached }) => {
            let topology = existing_topology(&compile_dir(state_dir));
            match reason {
                StaleReason::NoCache => Freshness::Absent { topology },
                reason => Freshness::Stale {
                    reason,
                    cached,
                    topology,
                },
            }
        }
    }
}

/// Loads the cache keylessly (HOST.md §6.6): every check of [`freshness`] except the key
/// comparison, then the re-lowered IR ready for `core::ir::mount`. No model, no network.
///
/// Errors: the [`StaleReason`] of the first failing check (`NoCache` when there is no
/// manifest).
pub fn load_ir(state_dir: &Path) -> Result<LoadedIr, StaleReason> {
    load(state_dir, None).map_err(|f| f.reason)
}
