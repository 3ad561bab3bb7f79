//! `reactors[]`: several isolated reactors in one host (HOST.md §4.4).

use std::path::{Path, PathBuf};

use super::RESERVED_REACTOR_NAMES;
use super::error::{ConfigFileError, invalid};
use super::gateways::{GatewayConfig, parse_gateways};
use super::read::{Mapping, is_reactor_name, list, path_value, string};
use crate::host::yaml::{Pos, YamlNode, clip};

const REACTOR_KEYS: &[&str] = &["name", "project", "state_dir", "gateways"];

/// One `reactors[]` entry as written (paths resolved, defaults for `name` applied; the state
/// directory default depends on `--state-dir` and is applied by
/// [`crate::host::project::Project::load`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ReactorEntry {
    /// 0-based index in the list.
    pub index: usize,
    /// Position of the entry.
    pub(crate) pos: Pos,
    /// `name` (default `reactor-<index>`).
    pub name: String,
    /// `project`: the contracts directory (default: the project directory).
    pub project: PathBuf,
    /// `state_dir` when set.
    pub state_dir: Option<PathBuf>,
    /// Position of `state_dir` when set.
    pub(crate) state_dir_pos: Option<Pos>,
    /// `gateways`.
    pub gateways: Vec<GatewayConfig>,
}

pub(super) fn parse_reactors(
    node: &YamlNode,
    project_dir: &Path,
) -> Result<Vec<ReactorEntry>, ConfigFileError> {
    let items = list(node, "reactors")?;
    if items.is_empty() {
        return Err(invalid(
            node.pos,
            "reactors",
            "the list is empty (remove the key for a single reactor)",
        ));
    }
    let mut out: Vec<ReactorEntry> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let rpath = format!("reactors[{i}]");
        let m = Mapping::read(item, &rpath, REACTOR_KEYS)?;
        let name = match m.get("name") {
            Some(v) => {
                let npath = m.child("name");
                let name = string(v, &npath)?;
                if !is_reactor_name(&name) {
                    return Err(invalid(
                        v.pos,
                        &npath,
                        format!(
                            "invalid value '{}' (expected a name matching [A-Za-z0-9][A-Za-z0-9._-]*)",
                            clip(&name, 60)
                        ),
                    ));
                }
                if RESERVED_REACTOR_NAMES.contains(&name.as_str()) {
                    return Err(invalid(
                        v.pos,
                        &npath,
                        format!(
                            "'{name}' is a route name of the daemon (reserved: {})",
                            RESERVED_REACTOR_NAMES.join(", ")
                        ),
                    ));
                }
                name
            }
            None => format!("reactor-{i}"),
        };
        if let Some(prev) = out.iter().find(|r| r.name == name) {
            let pos = m.get("name").map(|v| v.pos).unwrap_or(m.pos);
            return Err(invalid(
                pos,
                &m.child("name"),
                format!(
                    "duplicate reactor name '{name}' (already used by reactors[{}])",
                    prev.index
                ),
            ));
        }
        let project = match m.get("project") {
            Some(v) => path_value(v, &m.child("project"), project_dir)?,
            None => project_dir.to_path_buf(),
        };
        let (state_dir, state_dir_pos) = match m.get("state_dir") {
            Some(v) => (
                Some(path_value(v, &m.child("state_dir"), project_dir)?),
                Some(v.pos),
            ),
            None => (None, None),
        };
        let gateways = match m.get("gateways") {
            Some(g) => parse_gateways(g, &m.child("gateways"), project_dir)?,
            None => Vec::new(),
        };
        out.push(ReactorEntry {
            index: i,
            pos: item.pos,
            name,
            project,
            state_dir,
            state_dir_pos,
            gateways,
        });
    }
    Ok(out)
}
