//! The harness's own argument checks (RUNTIME.md §8.5–§8.6): schema validation of tool
//! arguments, the `finish` signal, and tool paths.

use std::collections::HashMap;

use serde_json::Value;

use super::{PathError, ToolError, finish_schema};
use crate::format::jsonschema::{self, MemberOrder, Options, ViolationKind};
use crate::format::opwm::{OpwmError, normalize_path};

/// The type name of a value in error results (`integer` for integers, `number` otherwise).
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Validates `value` against a tool schema with the project's JSON-Schema-subset validator
/// ([`crate::format::jsonschema`]; absent nullable members count as `null`, RUNTIME.md §8.6).
/// Members are checked required-first: absent required members, unknown members, then the
/// members in argument order.
///
/// Errors: [`ToolError::Arguments`], the first violation with its JSON path
/// (`$.status: expected one of "done", "failed"`).
pub fn validate(schema: &Value, value: &Value) -> Result<(), ToolError> {
    let options = Options {
        order: MemberOrder::RequiredFirst,
        max_items: None,
        max_violations: 1,
    };
    let report = jsonschema::check(schema, value, &options);
    let Some(v) = report.violations.first() else {
        return Ok(());
    };
    let problem = match &v.kind {
        ViolationKind::Type { expected, found } => {
            format!(
                "expected {}, got {}",
                expected.join(" or "),
                type_name(found)
            )
        }
        ViolationKind::Enum { allowed, .. } => {
            let shown: Vec<String> = allowed.iter().map(Value::to_string).collect();
            format!("expected one of {}", shown.join(", "))
        }
        ViolationKind::Missing { key } => format!(
            "missing required property {}",
            Value::String(key.to_string())
        ),
        ViolationKind::Unknown { key } => {
            format!("unknown property {}", Value::String(key.to_string()))
        }
        ViolationKind::TooManyItems { len, max } => format!("has {len} items (at most {max})"),
    };
    Err(ToolError::Arguments {
        path: v.path.to_string(),
        problem,
    })
}

/// The outcome claimed by `finish`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishStatus {
    /// `done`: harvest and commit.
    Done,
    /// `failed`: a failed receipt with the reason.
    Failed,
}

/// A valid final signal (RUNTIME.md §8.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishSignal {
    /// The claimed outcome.
    pub status: FinishStatus,
    /// The reason, when given (not trimmed).
    pub reason: Option<String>,
    /// `semantic_diff.summary`, when given.
    pub summary: Option<String>,
    /// `semantic_diff.notes`, when given.
    pub notes: Option<Vec<String>>,
    /// Attested values by postcondition id.
    pub attestations: HashMap<String, bool>,
}

/// Validates and decodes `finish` arguments for a node with the render-attested ids `attested`.
///
/// Lenient where the outcome is unambiguous: a `failed` signal may omit `attestations` (or send
/// `null`), and a node without attested ids accepts an absent, `null` or empty `attestations`.
///
/// Errors: the schema violation (see [`validate`]).
pub fn parse_finish(args: &Value, attested: &[String]) -> Result<FinishSignal, ToolError> {
    let mut args = args.clone();
    let mut schema = finish_schema(attested);
    if let Value::Object(obj) = &mut args {
        let att = obj.get("attestations");
        let vacuous = match att {
            None | Some(Value::Null) => true,
            Some(Value::Object(o)) => o.is_empty(),
            _ => false,
        };
        let failed = obj.get("status").and_then(Value::as_str) == Some("failed");
        if attested.is_empty() && vacuous {
            obj.remove("attestations");
        } else if failed && matches!(att, None | Some(Value::Null)) {
            obj.remove("attestations");
            if let Some(Value::Array(req)) = schema.get_mut("required") {
                req.retain(|r| r != "attestations");
            }
        }
    }
    validate(&schema, &args)?;
    let get_str = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let status = match args.get("status").and_then(Value::as_str) {
        Some("done") => FinishStatus::Done,
        _ => FinishStatus::Failed,
    };
    let diff = args.get("semantic_diff").filter(|d| d.is_object());
    let summary = get_str(diff.and_then(|d| d.get("summary")));
    let notes = diff
        .and_then(|d| d.get("notes"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        });
    let attestations = args
        .get("attestations")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| v.as_bool().map(|b| (k.clone(), b)))
                .collect()
        })
        .unwrap_or_default();
    Ok(FinishSignal {
        status,
        reason: get_str(args.get("reason")),
        summary,
        notes,
        attestations,
    })
}

/// Normalizes a path given to a tool (RUNTIME.md §8.2, §8.5): `\` → `/`, empty and `.`
/// segments dropped.
///
/// Errors: [`PathError`] for empty, NUL, absolute (`/x`, `\x`, `C:…`) and `..` paths.
pub fn tool_path(raw: &str) -> Result<String, PathError> {
    if raw.is_empty() {
        return Err(PathError::Empty);
    }
    if raw.contains('\0') {
        return Err(PathError::Nul);
    }
    let b = raw.as_bytes();
    let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
    if raw.starts_with('/') || raw.starts_with('\\') || drive {
        return Err(PathError::Absolute(raw.to_string()));
    }
    normalize_path(raw).map_err(|e| match e {
        OpwmError::DotDot(_) => PathError::LeavesWorkspace(raw.to_string()),
        OpwmError::EmptyPath(_) => PathError::EmptyAfterNormalization(raw.to_string()),
        other => PathError::Invalid(other),
    })
}
