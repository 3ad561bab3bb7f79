//! The world-model store (FORMATS.md §14): per node `world-models/<hex(node)>/` with
//! `published.json`, `atomic-index.json` and content-addressed `versions/sha256_<hex>.bin`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::format::address::is_content_address;
use crate::format::json::{self, Object, Value};
use crate::format::layout::{self, node_segment, version_file_name};
use crate::format::opwm::{self, FileTree};
use crate::format::receipt::Fingerprints;
use crate::store::fsutil;
use crate::store::source::StateSource;

/// A node's current pointer (`published.json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    /// The committed artifact's version (content address).
    pub version: String,
    /// The committed fingerprint map.
    pub fingerprints: Fingerprints,
}

impl Published {
    /// Parses `published.json` (any key order; `version` a string, `fingerprints` an object of
    /// strings).
    pub fn parse(bytes: &[u8]) -> Option<Published> {
        let v = json::parse(bytes).ok()?;
        Some(Published {
            version: v.get("version")?.as_str()?.to_string(),
            fingerprints: Fingerprints::from_value(v.get("fingerprints")?)?,
        })
    }

    /// The file bytes: compact JSON, `version` then `fingerprints`, no trailing newline.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut o = Object::new();
        o.push_unique("version", Value::str(self.version.clone()));
        o.push_unique("fingerprints", self.fingerprints.to_value());
        json::compact_string(&Value::Object(o)).into_bytes()
    }
}

/// Read access to a world-model store through a [`StateSource`].
#[derive(Debug)]
pub(crate) struct WorldModelReader<'a> {
    src: &'a dyn StateSource,
    base: &'static str,
}

impl<'a> WorldModelReader<'a> {
    /// The store of a state directory: `world-models/`, or `world-model/` when only that
    /// exists; `None` when there is no store.
    pub(crate) fn open(src: &'a dyn StateSource) -> Option<WorldModelReader<'a>> {
        let base = if src.is_dir(layout::WORLD_MODELS_DIR) {
            layout::WORLD_MODELS_DIR
        } else if src.is_dir(layout::WORLD_MODEL_DIR_SINGULAR) {
            layout::WORLD_MODEL_DIR_SINGULAR
        } else {
            return None;
        };
        Some(WorldModelReader { src, base })
    }

    fn rel(&self, node: &str, file: &str) -> String {
        format!("{}/{}/{}", self.base, node_segment(node), file)
    }

    /// The node's `published.json`, if present and well formed.
    pub(crate) fn published(&self, node: &str) -> Option<Published> {
        let bytes = self
            .src
            .read(&self.rel(node, layout::PUBLISHED_FILE))
            .ok()??;
        Published::parse(&bytes)
    }

    /// The node's `atomic-index.json` (empty when absent or malformed).
    pub(crate) fn atomic_index(&self, node: &str) -> HashMap<String, String> {
        let Some(Ok(Some(bytes))) = Some(self.src.read(&self.rel(node, layout::ATOMIC_INDEX_FILE)))
        else {
            return HashMap::new();
        };
        let Ok(Value::Object(o)) = json::parse(&bytes) else {
            return HashMap::new();
        };
        o.iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?.to_string())))
            .collect()
    }

    fn artifact(&self, node: &str, version: &str) -> Option<Vec<u8>> {
        let name = version_file_name(version)?;
        self.src
            .read(&self.rel(node, &format!("{}/{}", layout::VERSIONS_DIR, name)))
            .ok()?
    }

    /// Looks up a version (FORMATS.md §14.9): the exact version file, then `atomic-index.json`,
    /// then the published `@atomic` alias. Returns the resolved artifact version and its files
    /// in artifact order; `None` when nothing is found or the artifact is invalid.
    pub(crate) fn read_version(&self, node: &str, requested: &str) -> Option<(String, FileTree)> {
        if !self
            .src
            .is_dir(&format!("{}/{}", self.base, node_segment(node)))
        {
            return None;
        }
        let decode = |version: &str| -> Option<(String, FileTree)> {
            let bytes = self.artifact(node, version)?;
            opwm::decode(&bytes).ok().map(|t| (version.to_string(), t))
        };
        if is_content_address(requested)
            && let Some(found) = decode(requested)
        {
            return Some(found);
        }
        if let Some(v) = self.atomic_index(node).get(requested)
            && let Some(found) = decode(v)
        {
            return Some(found);
        }
        let published = self.published(node)?;
        if published.fingerprints.atomic_token() == Some(requested) {
            return decode(&published.version);
        }
        None
    }
}

/// When world-model writes become durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Every file: temp + fsync + rename + directory fsync before `commit` returns.
    Immediate,
    /// Group commit: temp + rename only; [`WorldModelStore::flush`] makes the whole group
    /// durable with one `syncfs(2)`, and the ledger's group is written only after that.
    Deferred,
}

/// node → (current pointer, current files).
type PublishedCache = HashMap<String, (Published, std::sync::Arc<FileTree>)>;

/// Write access to `<state-dir>/world-models/` (writers hold the state-dir lock).
#[derive(Clone, Debug)]
pub struct WorldModelStore {
    root: PathBuf,
    durability: Durability,
    /// node → its current pointer and files, filled on commit and on first read. Writers hold
    /// the state-dir lock, so nothing else changes the store under this cache.
    cache: std::sync::Arc<std::sync::Mutex<PublishedCache>>,
}

impl WorldModelStore {
    /// The store under `state_dir` (created on first commit).
    pub fn new(state_dir: &Path) -> WorldModelStore {
        WorldModelStore {
            root: state_dir.join(layout::WORLD_MODELS_DIR),
            durability: Durability::Immediate,
            cache: Default::default(),
        }
    }

    /// Sets the durability mode.
    pub fn with_durability(mut self, durability: Durability) -> WorldModelStore {
        self.durability = durability;
        self
    }

    /// Makes deferred writes durable (a no-op in immediate mode).
    pub fn flush(&self) -> std::io::Result<()> {
        match self.durability {
            Durability::Immediate => Ok(()),
            Durability::Deferred if self.root.is_dir() => fsutil::sync_filesystem(&self.root),
            Durability::Deferred => Ok(()),
        }
    }

    fn write(&self, target: &Path, bytes: &[u8]) -> std::io::Result<()> {
        match self.durability {
            Durability::Immediate => fsutil::write_atomic(target, bytes),
            Durability::Deferred => fsutil::write_atomic_deferred(target, bytes),
        }
    }

    fn node_dir(&self, node: &str) -> PathBuf {
        self.root.join(node_segment(node))
    }

    fn cached(&self, node: &str) -> Option<(Published, std::sync::Arc<FileTree>)> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = cache.get(node) {
            return Some(hit.clone());
        }
        let bytes = std::fs::read(self.node_dir(node).join(layout::PUBLISHED_FILE)).ok()?;
        let published = Published::parse(&bytes)?;
        let files = self
            .read_version(node, &published.version)
            .unwrap_or_default();
        let entry = (published, std::sync::Arc::new(files));
        cache.insert(node.to_string(), entry.clone());
        Some(entry)
    }

    /// The node's published pointer, if any.
    pub fn published(&self, node: &str) -> Option<Published> {
        self.cached(node).map(|(p, _)| p)
    }

    /// The node's current files (empty for a cold node or an unreadable artifact).
    pub fn published_files(&self, node: &str) -> FileTree {
        self.cached(node)
            .map(|(_, f)| f.as_ref().clone())
            .unwrap_or_default()
    }

    /// The files of an exact version.
    pub(crate) fn read_version(&self, node: &str, version: &str) -> Option<FileTree> {
        let name = version_file_name(version)?;
        let bytes =
            std::fs::read(self.node_dir(node).join(layout::VERSIONS_DIR).join(name)).ok()?;
        opwm::decode(&bytes).ok()
    }

    /// Commits a tree (FORMATS.md §14.8 steps 1–4): writes the version file if absent, updates
    /// `atomic-index.json` when `@atomic` differs from the version, then flips `published.json`.
    /// Every write is temp + fsync + rename + directory fsync. Returns the version.
    pub fn commit(
        &self,
        node: &str,
        artifact: &[u8],
        fingerprints: &Fingerprints,
    ) -> std::io::Result<String> {
        self.commit_tree(node, artifact, None, fingerprints)
    }

    /// [`WorldModelStore::commit`] with the decoded tree at hand (it is cached for readers).
    pub(crate) fn commit_tree(
        &self,
        node: &str,
        artifact: &[u8],
        tree: Option<FileTree>,
        fingerprints: &Fingerprints,
    ) -> std::io::Result<String> {
        let result = self.commit_files(node, artifact, fingerprints);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        match (&result, tree) {
            (Ok(version), Some(tree)) => {
                let published = Published {
                    version: version.clone(),
                    fingerprints: fingerprints.clone(),
                };
                cache.insert(node.to_string(), (published, std::sync::Arc::new(tree)));
            }
            _ => {
                cache.remove(node);
            }
        }
        result
    }

    fn commit_files(
        &self,
        node: &str,
        artifact: &[u8],
        fingerprints: &Fingerprints,
    ) -> std::io::Result<String> {
        let version = opwm::version(artifact);
        let dir = self.node_dir(node);
        let versions = dir.join(layout::VERSIONS_DIR);
        let name = version_file_name(&version).unwrap_or_default();
        let vfile = versions.join(name);
        match self.durability {
            Durability::Immediate => {
                fsutil::create_dir_all_durable(&versions)?;
                fsutil::write_atomic_if_absent(&vfile, artifact)?;
            }
            Durability::Deferred => {
                if !versions.is_dir() {
                    fsutil::create_dir_all_deferred(&versions)?;
                }
                if !vfile.exists() {
                    fsutil::write_atomic_deferred(&vfile, artifact)?;
                }
            }
        }
        if let Some(atomic) = fingerprints.atomic_token()
            && atomic != version
        {
            let idx_path = dir.join(layout::ATOMIC_INDEX_FILE);
            let mut idx = match std::fs::read(&idx_path).ok().map(|b| json::parse(&b)) {
                Some(Ok(Value::Object(o))) => o,
                _ => Object::new(),
            };
            idx.insert(atomic, Value::str(version.clone()));
            let mut bytes = Vec::new();
            let _ = json::write_canonical(&Value::Object(idx), &mut bytes);
            bytes.push(b'\n');
            self.write(&idx_path, &bytes)?;
        }
        let published = Published {
            version: version.clone(),
            fingerprints: fingerprints.clone(),
        };
        self.write(&dir.join(layout::PUBLISHED_FILE), &published.to_bytes())?;
        Ok(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::address::EMPTY_TREE_ADDRESS;
    use crate::store::source::DiskSource;

    #[test]
    fn commit_and_read_back() {
        let d = tempfile::tempdir().unwrap();
        let store = WorldModelStore::new(d.path());
        let art = opwm::encode(vec![("truth.json".into(), b"{\"a\":1}".to_vec())]).unwrap();
        let v = opwm::version(&art);
        let fp = Fingerprints::atomic(v.clone());
        assert_eq!(store.commit("n", &art, &fp).unwrap(), v);
        let pubbytes = std::fs::read(d.path().join("world-models/6e/published.json")).unwrap();
        assert_eq!(pubbytes.len(), 186);
        assert!(!pubbytes.ends_with(b"\n"));
        assert!(!d.path().join("world-models/6e/atomic-index.json").exists());
        // A faceted node: @atomic differs from the version → atomic-index.json.
        let fp2 = Fingerprints(vec![
            ("@atomic".into(), "tok-A".into()),
            ("f".into(), "x".into()),
        ]);
        let art2 = opwm::encode(vec![("truth.json".into(), b"{\"a\":2}".to_vec())]).unwrap();
        let v2 = store.commit("n", &art2, &fp2).unwrap();
        let src = DiskSource::new(d.path());
        let r = WorldModelReader::open(&src).unwrap();
        assert_eq!(r.published("n").unwrap().version, v2);
        assert_eq!(r.read_version("n", &v).unwrap().0, v);
        assert_eq!(r.read_version("n", "tok-A").unwrap().0, v2);
        assert!(r.read_version("n", "nope").is_none());
        assert!(r.read_version("other", &v).is_none());
        assert!(r.read_version("n", EMPTY_TREE_ADDRESS).is_none());
        assert_eq!(store.published_files("n")[0].1, b"{\"a\":2}");
    }
}
