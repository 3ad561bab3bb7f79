//! Prose contracts (`*.prose.md`): discovery, parsing, identity, sections, kinds, facets, the
//! per-node contract fingerprint and the contract-set fingerprint (RUNTIME.md §2), plus the
//! renderings the compile sessions and renders need (the evidence message of RUNTIME.md §3.2.1
//! and the node contract view of RUNTIME.md §8.3.2 / FORMATS.md §15.5).
//!
//! Entry points:
//!
//! - [`ContractSet::load`] walks a contracts directory ([`discover`]), parses every file
//!   ([`parse_contract`]) and orders the set by id (UTF-16 order).
//! - [`Contract::fingerprint`] is the memo key's first half (§2.7);
//!   [`ContractSet::fingerprint`] is the compile cache key's first component (§2.8).
//! - [`render_evidence`] is compile user message 1; [`contract_view`] is the per-node view shown
//!   to renders and persisted in `compile/nodes/<hex>.json`.
//!
//! Every failure is a [`ContractError`] naming the file (relative to the contracts directory)
//! and, where one exists, the 1-based line.

mod discover;
mod fingerprint;
mod render;
mod text;

use std::fmt;

pub use discover::{Discovered, MAX_DEPTH, MAX_ENTRIES, discover};
pub use render::{VIEW_KEYS, contract_view, render_evidence};
pub use text::{js_trim, normalize_text, parse_contract, section_key};

use crate::format::receipt::WakeSource;

/// Largest contract file the loader reads, in bytes (8 MiB). A larger file is a
/// [`ContractError::TooLarge`] instead of an unbounded read (a project addition: the
/// reference has no limit).
pub const MAX_CONTRACT_BYTES: u64 = 8 * 1024 * 1024;

/// Largest id of a node contract (`responsibility` or `gateway`), in UTF-8 bytes. Node ids are
/// hex-encoded into file names under `compile/nodes/` and the world-model store, so the project
/// creates none longer (FORMATS.md §1 "Node id"); a longer node id is a [`BadIdReason::TooLong`]
/// load error rather than a compile-time file-system failure.
pub(crate) const MAX_NODE_ID_BYTES: usize = 120;

/// The file-name suffix of every contract (`*.prose.md`, RUNTIME.md §2.1).
pub(crate) const CONTRACT_SUFFIX: &str = ".prose.md";

/// A contract's kind (RUNTIME.md §2.4). `responsibility` when front matter names none. JSON
/// (the Forme answer): its front-matter spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `responsibility`: a node with a standing goal and a persisted world-model.
    Responsibility,
    /// `gateway`: an external-driven node, an ingress entry point.
    Gateway,
    /// `function`: a stateless procedure; never a node.
    Function,
    /// `pattern`: reusable prose; evidence only.
    Pattern,
    /// `test`: evidence only.
    Test,
}

impl Kind {
    /// All kinds, in the order the spec lists them.
    pub const ALL: [Kind; 5] = [
        Kind::Responsibility,
        Kind::Gateway,
        Kind::Function,
        Kind::Pattern,
        Kind::Test,
    ];

    /// The front-matter spelling (`responsibility`, `gateway`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Responsibility => "responsibility",
            Kind::Gateway => "gateway",
            Kind::Function => "function",
            Kind::Pattern => "pattern",
            Kind::Test => "test",
        }
    }

    /// Parses the exact (case-sensitive) front-matter spelling.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// True for the node kinds `responsibility` and `gateway`.
    pub fn is_node(self) -> bool {
        matches!(self, Kind::Responsibility | Kind::Gateway)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One kept `###` section (RUNTIME.md §2.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    /// The heading text after `### `, trimmed (`Maintains (facets)`).
    pub heading: String,
    /// The canonical key: the heading's first word, first character upper-case and the rest
    /// lower-case (`Maintains`). Keys are unique within a contract.
    pub key: String,
    /// The trimmed, non-empty body (multi-line; `####` subsections included).
    pub body: String,
    /// 1-based line of the heading in the file.
    pub line: usize,
}

/// A facet declared by a `####` heading inside `### Maintains` (RUNTIME.md §2.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facet {
    /// The full heading text after `#### `, trimmed; non-empty, not starting with `@`, unique.
    pub name: String,
    /// The trimmed text up to the next `####` heading or the end of the section (may be empty).
    pub description: String,
    /// 1-based line of the `####` heading in the file.
    pub line: usize,
}

/// One loaded `*.prose.md` contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contract {
    /// Front-matter `id`, else `name`, else the file stem. Non-empty, no `::`, no leading `@`.
    pub id: String,
    /// Front-matter `name`, else the id.
    pub name: String,
    /// Front-matter `kind`, else `responsibility`.
    pub kind: Kind,
    /// Path relative to the contracts directory, `/`-separated (not part of any fingerprint).
    pub path: String,
    /// Kept sections in file order.
    pub sections: Vec<Section>,
    /// Declared facets in file order. Always empty for non-node kinds (their `####` headings
    /// are not facets and are not validated).
    pub facets: Vec<Facet>,
}

impl Contract {
    /// True for `responsibility` and `gateway` contracts (topology nodes).
    pub fn is_node(&self) -> bool {
        self.kind.is_node()
    }

    /// True when the node declares at least one facet; otherwise it is atomic-only and exposes
    /// only `@atomic`.
    pub(crate) fn is_faceted(&self) -> bool {
        !self.facets.is_empty()
    }

    /// Declared facet names in file order (never `@atomic`).
    pub fn facet_names(&self) -> Vec<&str> {
        self.facets.iter().map(|f| f.name.as_str()).collect()
    }

    /// The section whose key equals `key` case-insensitively (`"maintains"` finds
    /// `### Maintains (facets)`).
    pub fn section(&self, key: &str) -> Option<&Section> {
        let wanted = section_key(key);
        self.sections.iter().find(|s| s.key == wanted)
    }

    /// The trimmed body of the section `key`, or `""` when the contract has none.
    pub fn body(&self, key: &str) -> &str {
        self.section(key).map(|s| s.body.as_str()).unwrap_or("")
    }

    /// The exact text hashed by [`Contract::fingerprint`] (RUNTIME.md §2.7): eight lines
    /// `id:`, `name:`, `kind:`, `requires:`, `maintains:`, `continuity:`, `execution:`,
    /// `criteria:`, joined by `\n`, no trailing newline.
    pub fn fingerprint_text(&self) -> String {
        fingerprint::contract_fingerprint_text(self)
    }

    /// The contract fingerprint: `sha256:` + hex of SHA-256 over [`Contract::fingerprint_text`]
    /// (RUNTIME.md §2.7). Equal to the reference CLI 0.2.x derivation.
    pub fn fingerprint(&self) -> String {
        fingerprint::contract_fingerprint(self)
    }

    /// The postcondition sentences of the Maintains section (RUNTIME.md §2.3, §3.5.1): every
    /// sentence beginning `Postcondition:` at the start of a line, of a list item or after a
    /// sentence end (`.`, `!`, `?`, `;`), running to the next such sentence, a blank line, a
    /// heading, a list item or a code fence. Hard-wrapped lines are joined with one space.
    /// Text inside code fences is never a postcondition. In file order; `[]` when none.
    pub fn postconditions(&self) -> Vec<String> {
        render::postcondition_sentences(self.body("Maintains"))
    }

    /// A deterministic reading of the node's wake intent (RUNTIME.md §2.3 `Continuity`):
    /// `external` for gateways; otherwise whichever of `input-driven`, `self-driven`,
    /// `external-driven` (case-insensitive) appears first in the Continuity body. `None` for
    /// non-node contracts and when Continuity names none. The Forme session makes the binding
    /// decision (§3.3); this is a hint for checks, scripted compiles and diagnostics.
    pub fn wake_intent(&self) -> Option<WakeSource> {
        render::wake_intent(self)
    }

    /// The node contract view shown to renders (see [`contract_view`]).
    pub fn view(&self) -> Vec<(String, String)> {
        contract_view(self)
    }
}

/// Why an id is rejected (RUNTIME.md §2.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadIdReason {
    /// The id is empty.
    Empty,
    /// The id contains `::` (reserved for phantom ingress producers).
    DoubleColon,
    /// The id starts with `@` (reserved for facets such as `@atomic`).
    LeadingAt,
    /// A node id longer than [`MAX_NODE_ID_BYTES`] UTF-8 bytes.
    TooLong {
        /// The id's length in UTF-8 bytes.
        bytes: usize,
    },
}

impl fmt::Display for BadIdReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadIdReason::Empty => f.write_str("an id must not be empty"),
            BadIdReason::DoubleColon => {
                f.write_str("an id must not contain '::' (reserved for ingress producers)")
            }
            BadIdReason::LeadingAt => {
                f.write_str("an id must not start with '@' (reserved for facets)")
            }
            BadIdReason::TooLong { bytes } => write!(
                f,
                "a node id must be at most {MAX_NODE_ID_BYTES} UTF-8 bytes (this one has {bytes})"
            ),
        }
    }
}

/// Why a facet heading is rejected (RUNTIME.md §2.5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BadFacetReason {
    /// `#### ` with nothing after it.
    Empty,
    /// The name starts with `@` (`@atomic` and every `@…` name are reserved).
    LeadingAt,
    /// The name was already declared in this node.
    Duplicate {
        /// 1-based line of the first declaration.
        first_line: usize,
    },
}

impl fmt::Display for BadFacetReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadFacetReason::Empty => f.write_str("a facet name must not be empty"),
            BadFacetReason::LeadingAt => {
                f.write_str("a facet name must not start with '@' (reserved)")
            }
            BadFacetReason::Duplicate { first_line } => {
                write!(f, "already declared at line {first_line}")
            }
        }
    }
}

/// `path` or `path:line`.
fn at(path: &str, line: Option<usize>) -> String {
    match line {
        Some(l) => format!("{path}:{l}"),
        None => path.to_owned(),
    }
}

/// A load error (RUNTIME.md §2.9). Paths are relative to the contracts directory (`/`-separated)
/// except for directory-level errors, which name the directory as given. Lines are 1-based.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    /// A directory or file could not be read.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The directory as given, or a relative contract path.
        path: String,
        /// The operating-system error text.
        message: String,
    },
    /// The contracts directory is not a directory.
    #[error("{dir} is not a directory")]
    NotADirectory {
        /// The directory as given.
        dir: String,
    },
    /// More than [`MAX_ENTRIES`] entries were visited (RUNTIME.md §2.1).
    #[error("too many entries under {dir} (limit {limit})")]
    TooManyEntries {
        /// The directory as given.
        dir: String,
        /// [`MAX_ENTRIES`].
        limit: usize,
    },
    /// A contract file whose relative path is not valid UTF-8 (shown lossily).
    #[error("{path}: path is not valid UTF-8")]
    NonUtf8Path {
        /// The relative path with invalid bytes replaced by U+FFFD.
        path: String,
    },
    /// A contract file larger than [`MAX_CONTRACT_BYTES`].
    #[error("{path}: contract file is larger than {limit} bytes")]
    TooLarge {
        /// Relative path.
        path: String,
        /// [`MAX_CONTRACT_BYTES`].
        limit: u64,
    },
    /// The file is not valid UTF-8; `line` holds the first invalid byte.
    #[error("{path}:{line}: not valid UTF-8")]
    InvalidUtf8 {
        /// Relative path.
        path: String,
        /// 1-based line of the first invalid byte.
        line: usize,
    },
    /// An id that breaks RUNTIME.md §2.2. `line` is the front-matter line the id came from
    /// (`id:` or `name:`), `None` when it came from the file stem.
    #[error("{}: invalid id {id:?}: {reason}", at(.path, *.line))]
    BadId {
        /// Relative path.
        path: String,
        /// Front-matter line, if any.
        line: Option<usize>,
        /// The rejected id.
        id: String,
        /// What is wrong with it.
        reason: BadIdReason,
    },
    /// A `kind:` value outside `responsibility`, `gateway`, `function`, `pattern`, `test`.
    #[error(
        "{path}:{line}: unknown kind {value:?} (expected responsibility, gateway, function, pattern or test)"
    )]
    UnknownKind {
        /// Relative path.
        path: String,
        /// Front-matter line of `kind:`.
        line: usize,
        /// The value as written (quotes removed).
        value: String,
    },
    /// Two files declare the same id. `first` sorts before `second` by path.
    #[error("duplicate id {id:?}: declared by {first} and {second}")]
    DuplicateId {
        /// The shared id.
        id: String,
        /// Relative path of the first file.
        first: String,
        /// Relative path of the second file.
        second: String,
    },
    /// A section key that appears twice in one contract.
    #[error("{path}:{line}: duplicate section {key:?} (first at line {first_line})")]
    DuplicateSection {
        /// Relative path.
        path: String,
        /// Line of the second heading.
        line: usize,
        /// The canonical key.
        key: String,
        /// Line of the first heading.
        first_line: usize,
    },
    /// A `####` facet heading under `### Maintains` that breaks RUNTIME.md §2.5.
    #[error("{path}:{line}: invalid facet {name:?}: {reason}")]
    BadFacet {
        /// Relative path.
        path: String,
        /// Line of the `####` heading.
        line: usize,
        /// The facet name as written (trimmed).
        name: String,
        /// What is wrong with it.
        reason: BadFacetReason,
    },
}

impl ContractError {
    /// The relative contract path (or, for directory-level errors, the directory) the error
    /// names; for a duplicate id, the second file.
    pub fn path(&self) -> &str {
        match self {
            ContractError::Io { path, .. }
            | ContractError::NonUtf8Path { path }
            | ContractError::TooLarge { path, .. }
            | ContractError::InvalidUtf8 { path, .. }
            | ContractError::BadId { path, .. }
            | ContractError::UnknownKind { path, .. }
            | ContractError::DuplicateSection { path, .. }
            | ContractError::BadFacet { path, .. } => path,
            ContractError::NotADirectory { dir } | ContractError::TooManyEntries { dir, .. } => dir,
            ContractError::DuplicateId { second, .. } => second,
        }
    }
}

/// A loaded contract set: every contract under one directory, ordered by id in UTF-16
/// code-unit order (RUNTIME.md §2.1), ids unique.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContractSet {
    contracts: Vec<Contract>,
}

impl ContractSet {
    /// Discovers and loads every contract under `dir` (RUNTIME.md §2.1–§2.9). Files are parsed in
    /// path order and the first failure is returned. Zero contracts is not an error.
    ///
    /// Errors: every [`ContractError`] variant.
    pub fn load(dir: &std::path::Path) -> Result<ContractSet, ContractError> {
        let files = discover(dir)?;
        let mut contracts = Vec::with_capacity(files.len());
        for file in &files {
            let bytes = discover::read_contract_file(&file.abs_path, &file.rel_path)?;
            contracts.push(parse_contract(&bytes, &file.rel_path)?);
        }
        ContractSet::from_contracts(contracts)
    }

    /// Builds a set from parsed contracts: rejects duplicate ids (naming both paths, the
    /// smaller path first) and orders by id (UTF-16 order).
    pub fn from_contracts(mut contracts: Vec<Contract>) -> Result<ContractSet, ContractError> {
        contracts.sort_by(|a, b| {
            crate::format::json::utf16_cmp(&a.id, &b.id).then_with(|| a.path.cmp(&b.path))
        });
        for pair in contracts.windows(2) {
            if pair[0].id == pair[1].id {
                return Err(ContractError::DuplicateId {
                    id: pair[1].id.clone(),
                    first: pair[0].path.clone(),
                    second: pair[1].path.clone(),
                });
            }
        }
        Ok(ContractSet { contracts })
    }

    /// All contracts in id order (non-node kinds included).
    pub fn contracts(&self) -> &[Contract] {
        &self.contracts
    }

    /// Number of contracts.
    pub fn len(&self) -> usize {
        self.contracts.len()
    }

    /// True when the directory held no contract.
    pub fn is_empty(&self) -> bool {
        self.contracts.is_empty()
    }

    /// The contract with this id.
    pub fn get(&self, id: &str) -> Option<&Contract> {
        self.contracts
            .binary_search_by(|c| crate::format::json::utf16_cmp(&c.id, id))
            .ok()
            .map(|i| &self.contracts[i])
    }

    /// The node contracts (`responsibility`, `gateway`) in id order.
    pub fn nodes(&self) -> impl Iterator<Item = &Contract> {
        self.contracts.iter().filter(|c| c.is_node())
    }

    /// `(node id, contract fingerprint)` for every node contract, in id order (the shape of the
    /// topology envelope's `contract_fingerprints`, FORMATS.md §15.1).
    pub fn contract_fingerprints(&self) -> Vec<(String, String)> {
        self.nodes()
            .map(|c| (c.id.clone(), c.fingerprint()))
            .collect()
    }

    /// The contract-set fingerprint (RUNTIME.md §2.8): `sha256:` + hex of SHA-256 over the
    /// canonical JSON of `{"image": "reactor.contract-set/1", "contracts": [<images>]}`.
    pub fn fingerprint(&self) -> String {
        fingerprint::contract_set_fingerprint(&self.contracts)
    }

    /// The canonical JSON text hashed by [`ContractSet::fingerprint`] (tests check the image).
    #[cfg(test)]
    pub(crate) fn fingerprint_image(&self) -> String {
        fingerprint::contract_set_image(&self.contracts)
    }
}
