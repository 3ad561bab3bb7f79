//! Integration tests of the contract loader (RUNTIME.md §2): the example projects under
//! `../shared/contracts`, the compat contract fingerprints, fingerprint stability and movement,
//! every load error, and hostile input.

mod examples;
mod hostile;
mod load_errors;
mod movement;
mod stability;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;
use reactor::contract::{
    BadFacetReason, BadIdReason, Contract, ContractError, ContractSet, Kind, MAX_CONTRACT_BYTES,
    MAX_ENTRIES, parse_contract, render_evidence,
};
use reactor::format::json;

// ---------------------------------------------------------------------------------------------
// Helpers

fn write(root: &Path, rel: &str, text: impl AsRef<[u8]>) {
    let p = root.join(rel);
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(p, text).unwrap();
}

fn load(root: &Path) -> Result<ContractSet, ContractError> {
    ContractSet::load(root)
}

fn parse(text: &str) -> Contract {
    parse_contract(text.as_bytes(), "node.prose.md").unwrap()
}

/// A node contract with every prompt-relevant section, plus a preamble and an unknown key.
const BASE: &str = "---
id: n1
name: Node One
kind: responsibility
version: 1
---

# Node One

An introduction that reaches no prompt.

### Goal
Keep the thing true.

### Context
Some background.

### Requires
- the upstream view

### Maintains
The maintained truth. Postcondition: it is non-empty.

#### items
The item set (unordered).

### Continuity
- input-driven: re-render when the upstream view moves.

### Execution
Read, then write.

### Criteria
Legacy criteria prose.

### Tools
A tool list.
";

/// A second, unchanging contract so that set fingerprints cover more than one image.
const OTHER: &str = "---\nname: other\nkind: pattern\n---\n### Goal\nReusable prose.\n";
