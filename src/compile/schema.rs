//! The three structured-output schemas of the compile sessions (RUNTIME.md §3.2.2, §3.3.2,
//! §3.4.2, §3.5.2), a validator for the small JSON-Schema subset they use, and the typed output
//! structures (unknown fields denied).
//!
//! The schemas are written to be accepted in strict mode by every provider the project targets:
//! the root is an object; every object lists all its properties as `required` and sets
//! `additionalProperties: false`; an optional scalar is a type union with `"null"`; an optional
//! object, array or enum is an `anyOf` with `{"type": "null"}`; there are no recursive
//! references, no `pattern` and no length keywords (ranges are lowering checks instead).
//!
//! [`validate`] checks an answer with the project's one validator of that subset
//! ([`crate::format::jsonschema`]: `type` as a name or a list of names, `enum`, `properties`,
//! `required`, `additionalProperties: false`, `items`, `anyOf`), caps every array at
//! [`MAX_ARRAY_ITEMS`] elements, and reports every violation as one line naming its JSON path
//! (`$.nodes[2].wake_source: …`). A member that is
//! absent but whose schema admits `null` counts as `null`, as §3.2.2 requires. [`parse_answer`]
//! validates, then deserializes into the typed output; a deserialization failure after a clean
//! validation is reported at `$`.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::contract::Kind;
use crate::core::canonicalizer::{FacetSpec, FieldRule};
use crate::core::postcondition::PostconditionEntry;
use crate::format::jsonschema::{
    self, MemberOrder, Options, Violation, ViolationKind, member_path,
};
use crate::format::receipt::WakeSource;
use crate::model::OutputSchema;

/// Schema name of the Forme session (HOST.md §5.3).
pub(crate) const FORME_SCHEMA_NAME: &str = "forme_output";
/// Schema name of the canonicalizer session.
pub(crate) const CANONICALIZER_SCHEMA_NAME: &str = "canonicalizer_output";
/// Schema name of the postcondition session.
pub(crate) const POSTCONDITION_SCHEMA_NAME: &str = "postcondition_output";

/// Most elements any array of an answer may hold. Longer arrays are a validation error (and
/// are not inspected further), which bounds every later check of an answer; no honest answer
/// comes close.
pub(crate) const MAX_ARRAY_ITEMS: usize = 10_000;

/// Most error lines one validation reports; further errors are summarized in one last line so
/// that a hostile answer cannot blow up the repair message.
pub const MAX_ERROR_LINES: usize = 100;

fn nullable(schema: Value) -> Value {
    json!({"anyOf": [schema, {"type": "null"}]})
}

fn object(properties: Value) -> Value {
    let required: Vec<Value> = properties
        .as_object()
        .map(|m| m.keys().map(|k| Value::String(k.clone())).collect())
        .unwrap_or_default();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

fn array(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

fn string() -> Value {
    json!({"type": "string"})
}

fn boolean() -> Value {
    json!({"type": "boolean"})
}

fn string_enum(values: &[&str]) -> Value {
    json!({"type": "string", "enum": values})
}

/// The Forme output schema (RUNTIME.md §3.3.2):
/// `{nodes: [{id, kind, wake_source, requires: [{facet, fan_in}], maintains: [string]}],
/// matches: [{subscriber, requirement, producer, facet}]}`.
pub fn forme_schema() -> OutputSchema {
    let need = object(json!({"facet": string(), "fan_in": boolean()}));
    let node = object(json!({
        "id": string(),
        "kind": string_enum(&["responsibility", "gateway", "function", "pattern", "test"]),
        "wake_source": string_enum(&["input", "self", "external"]),
        "requires": array(need),
        "maintains": array(string()),
    }));
    let matched = object(json!({
        "subscriber": string(),
        "requirement": string(),
        "producer": string(),
        "facet": string(),
    }));
    OutputSchema {
        name: FORME_SCHEMA_NAME.to_string(),
        schema: object(json!({"nodes": array(node), "matches": array(matched)})),
    }
}

/// The canonicalizer output schema (RUNTIME.md §3.4.2):
/// `{fields: [{path, material, text, number, collection}], default_material,
/// facets: [{facet, paths}]}` with `text` = `{collapse_whitespace, case_insensitive}` or null,
/// `number` = `{quantum: number|null}` or null, `collection` = `"ordered"|"set"|null`.
pub fn canonicalizer_schema() -> OutputSchema {
    let text = object(json!({"collapse_whitespace": boolean(), "case_insensitive": boolean()}));
    let number = object(json!({"quantum": {"type": ["number", "null"]}}));
    let field = object(json!({
        "path": string(),
        "material": boolean(),
        "text": nullable(text),
        "number": nullable(number),
        "collection": nullable(string_enum(&["ordered", "set"])),
    }));
    let facet = object(json!({"facet": string(), "paths": array(string())}));
    OutputSchema {
        name: CANONICALIZER_SCHEMA_NAME.to_string(),
        schema: object(json!({
            "fields": array(field),
            "default_material": boolean(),
            "facets": array(facet),
        })),
    }
}

/// The postcondition output schema (RUNTIME.md §3.5.2): `{postconditions: [{id, mode, facet,
/// predicate, source}]}` with `predicate` = `{nodes: [{kind, fact, value, children, child}],
/// root}` or null. The predicate is a flat pool, never a recursive schema.
pub fn postcondition_schema() -> OutputSchema {
    let pool_node = object(json!({
        "kind": string_enum(&[
            "equals", "not-equals", "greater-than-or-equal", "less-than", "and", "or", "not"
        ]),
        "fact": {"type": ["string", "null"]},
        "value": {"type": ["string", "number", "boolean", "null"]},
        "children": nullable(array(json!({"type": "integer"}))),
        "child": {"type": ["integer", "null"]},
    }));
    let predicate = object(json!({"nodes": array(pool_node), "root": {"type": "integer"}}));
    let entry = object(json!({
        "id": string(),
        "mode": string_enum(&["deterministic", "render-attested"]),
        "facet": string(),
        "predicate": nullable(predicate),
        "source": string(),
    }));
    OutputSchema {
        name: POSTCONDITION_SCHEMA_NAME.to_string(),
        schema: object(json!({"postconditions": array(entry)})),
    }
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

fn describe_types(types: &[&str]) -> String {
    let article = |t: &str| match t {
        "object" | "array" | "integer" => format!("an {t}"),
        "null" => "null".to_string(),
        _ => format!("a {t}"),
    };
    match types {
        [] => "a value".to_string(),
        [one] => article(one),
        [init @ .., last] => {
            let head: Vec<String> = init.iter().map(|t| article(t)).collect();
            format!("{} or {}", head.join(", "), article(last))
        }
    }
}

fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 40 {
        let mut s: String = text.chars().take(40).collect();
        s.push('…');
        s
    } else {
        text
    }
}

/// One repair line: `<JSON path>: <message>`.
fn repair_line(v: &Violation<'_>) -> String {
    match &v.kind {
        ViolationKind::Type { expected, found } => {
            let found = if expected.contains(&"integer") && found.is_number() {
                format!("{found} (not an integer)")
            } else {
                jsonschema::type_name(found).to_string()
            };
            format!(
                "{}: expected {}, found {found}",
                v.path,
                describe_types(expected)
            )
        }
        ViolationKind::Enum { allowed, found } => {
            let names: Vec<String> = allowed.iter().map(Value::to_string).collect();
            format!(
                "{}: {} is not one of {}",
                v.path,
                short(found),
                names.join(", ")
            )
        }
        ViolationKind::Missing { key } => {
            format!("{}: required member is missing", member_path(&v.path, key))
        }
        ViolationKind::Unknown { key } => format!("{}: unknown member", member_path(&v.path, key)),
        ViolationKind::TooManyItems { len, max } => {
            format!("{}: has {len} items (at most {max})", v.path)
        }
    }
}

/// Validates `v` against `schema` with the project's JSON-Schema-subset validator
/// ([`jsonschema::check`], members in schema order, arrays capped at [`MAX_ARRAY_ITEMS`]).
/// Returns every violation as `<JSON path>: <message>`, at most [`MAX_ERROR_LINES`] lines plus
/// one summary line (`$: … and <n> more errors`); `[]` when valid.
pub fn validate(schema: &Value, v: &Value) -> Vec<String> {
    let options = Options {
        order: MemberOrder::Properties,
        max_items: Some(MAX_ARRAY_ITEMS),
        max_violations: MAX_ERROR_LINES,
    };
    let report = jsonschema::check(schema, v, &options);
    let mut lines: Vec<String> = report.violations.iter().map(repair_line).collect();
    if report.dropped > 0 {
        lines.push(format!("$: … and {} more errors", report.dropped));
    }
    lines
}

/// Validates an answer against `schema` and deserializes it into `T` (RUNTIME.md §3.2.3 layer 1).
///
/// Errors: the validation lines of [`validate`], or `$: <serde message>` when the typed
/// structure still rejects a valid answer.
pub fn parse_answer<T: DeserializeOwned>(
    schema: &OutputSchema,
    v: &Value,
) -> Result<T, Vec<String>> {
    let errors = validate(&schema.schema, v);
    if !errors.is_empty() {
        return Err(errors);
    }
    T::deserialize(v).map_err(|e| vec![format!("$: {e}")])
}

// ---------------------------------------------------------------------------------------------
// Typed outputs
// ---------------------------------------------------------------------------------------------

/// The Forme answer (RUNTIME.md §3.3.2).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormeOutput {
    /// One entry per node.
    pub nodes: Vec<FormeNode>,
    /// Semantic Requires → Maintains decisions.
    pub matches: Vec<FormeMatch>,
}

/// `nodes[]` of the Forme answer.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormeNode {
    /// A loaded contract id.
    pub id: String,
    /// Must equal the contract's kind.
    pub kind: Kind,
    /// The node's intrinsic wake source.
    pub wake_source: WakeSource,
    /// The node's needs in Requires order.
    pub requires: Vec<FormeNeed>,
    /// The node's facet names (`[]` = `@atomic` only).
    pub maintains: Vec<String>,
}

/// `nodes[].requires[]` of the Forme answer.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormeNeed {
    /// The need name (non-empty, unique within the node).
    pub facet: String,
    /// Whether many producers may satisfy the need at once.
    pub fan_in: bool,
}

/// `matches[]` of the Forme answer.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormeMatch {
    /// A node id.
    pub subscriber: String,
    /// One of the subscriber's need names.
    pub requirement: String,
    /// A node id other than the subscriber.
    pub producer: String,
    /// A facet of the producer, or `@atomic`.
    pub facet: String,
}

/// The canonicalizer answer (RUNTIME.md §3.4.2): the node's canonicalization spec without its
/// `node` member, in the core's own types. Only the answer object itself denies unknown
/// members; inside it, [`validate`] reports them (the core types ignore unknown members, as
/// the compile-file reader must).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanonicalizerOutput {
    /// Field rules.
    pub fields: Vec<FieldRule>,
    /// Materiality of fields no rule governs.
    pub default_material: bool,
    /// One entry per declared facet.
    pub facets: Vec<FacetSpec>,
}

/// The postcondition answer (RUNTIME.md §3.5.2): the flat entries in the core's own type (pool
/// nodes lowered as they are read, see [`FlatNode`](crate::core::postcondition::FlatNode)).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostconditionOutput {
    /// One entry per postcondition.
    pub postconditions: Vec<PostconditionEntry>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::jsonschema::schema_types;

    /// Every object of a strict-mode schema lists all its properties as required and forbids
    /// others; no `$ref` anywhere.
    fn assert_strict(schema: &Value, path: &str) {
        assert!(schema.get("$ref").is_none(), "{path}: $ref");
        if schema_types(schema).contains(&"object") {
            let props = schema["properties"].as_object().expect("properties");
            let mut required: Vec<&str> = schema["required"]
                .as_array()
                .expect("required")
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            required.sort();
            let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
            keys.sort();
            assert_eq!(required, keys, "{path}: all properties required");
            assert_eq!(schema["additionalProperties"], json!(false), "{path}");
            for (k, sub) in props {
                assert_strict(sub, &format!("{path}.{k}"));
            }
        }
        if let Some(items) = schema.get("items") {
            assert_strict(items, &format!("{path}[]"));
        }
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
            for (i, b) in branches.iter().enumerate() {
                assert_strict(b, &format!("{path}|{i}"));
            }
        }
    }

    #[test]
    fn schemas_are_strict_mode_shaped_and_named() {
        for (s, name) in [
            (forme_schema(), "forme_output"),
            (canonicalizer_schema(), "canonicalizer_output"),
            (postcondition_schema(), "postcondition_output"),
        ] {
            assert_eq!(s.name, name);
            assert_eq!(s.schema["type"], "object");
            assert_strict(&s.schema, "$");
        }
    }

    #[test]
    fn validation_reports_every_error_with_its_path() {
        let s = forme_schema();
        let answer = json!({
            "nodes": [
                {"id": "a", "kind": "service", "wake_source": "input", "requires": [],
                 "maintains": [], "extra": 1},
                {"id": 7, "kind": "gateway", "wake_source": "external",
                 "requires": [{"facet": "x"}], "maintains": ["f", null]}
            ]
        });
        let errors = validate(&s.schema, &answer);
        assert_eq!(
            errors,
            vec![
                "$.nodes[0].kind: \"service\" is not one of \"responsibility\", \"gateway\", \"function\", \"pattern\", \"test\"",
                "$.nodes[0].extra: unknown member",
                "$.nodes[1].id: expected a string, found number",
                "$.nodes[1].requires[0].fan_in: required member is missing",
                "$.nodes[1].maintains[1]: expected a string, found null",
                "$.matches: required member is missing",
            ]
        );
        assert_eq!(
            validate(&s.schema, &json!([])),
            vec!["$: expected an object, found array"]
        );
    }

    #[test]
    fn nullable_members_may_be_absent_or_null_but_not_mistyped() {
        let s = canonicalizer_schema();
        let ok = json!({"fields": [{"path": "a", "material": true},
                                   {"path": "b", "material": false, "text": null,
                                    "number": {"quantum": null}, "collection": "set"}],
                        "default_material": true, "facets": []});
        assert_eq!(validate(&s.schema, &ok), Vec::<String>::new());
        let out: CanonicalizerOutput = parse_answer(&s, &ok).unwrap();
        assert_eq!(out.fields[0].text, None);
        assert_eq!(
            out.fields[1].number,
            Some(crate::core::canonicalizer::NumberRule { quantum: None })
        );
        assert_eq!(
            out.fields[1].collection,
            Some(crate::core::canonicalizer::Collection::Set)
        );
        let bad = json!({"fields": [{"path": "a", "material": true, "text": "yes",
                                     "number": {"quantum": "0.1"}, "collection": "bag"}],
                         "default_material": 1, "facets": [{"facet": "f", "paths": "a"}]});
        assert_eq!(
            validate(&s.schema, &bad),
            vec![
                "$.fields[0].text: expected an object or null, found string",
                "$.fields[0].number.quantum: expected a number or null, found string",
                "$.fields[0].collection: \"bag\" is not one of \"ordered\", \"set\"",
                "$.default_material: expected a boolean, found number",
                "$.facets[0].paths: expected an array, found string",
            ]
        );
    }

    #[test]
    fn integers_accept_integral_floats_only() {
        let s = postcondition_schema();
        let answer = json!({"postconditions": [{
            "id": "p", "mode": "deterministic", "facet": "f", "source": "s",
            "predicate": {"nodes": [
                {"kind": "or", "children": [1.0, 2], "fact": null, "value": null, "child": null},
                {"kind": "less-than", "fact": "n", "value": 3, "children": null, "child": null},
                {"kind": "not", "child": 1.5}
            ], "root": 0}
        }]});
        assert_eq!(
            validate(&s.schema, &answer),
            vec![
                "$.postconditions[0].predicate.nodes[2].child: expected an integer or null, found 1.5 (not an integer)"
            ]
        );
        let mut fixed = answer.clone();
        fixed["postconditions"][0]["predicate"]["nodes"][2]["child"] = json!(1);
        let out: PostconditionOutput = parse_answer(&s, &fixed).unwrap();
        let pool = &out.postconditions[0].predicate.as_ref().unwrap().nodes;
        assert_eq!(pool[0].children, Some(vec![1, 2]));
        assert_eq!(pool[1].value, Some(crate::format::json::Value::Number(3.0)));
        // Connectives keep only their own members.
        assert_eq!(pool[2].value, None);
        assert_eq!(pool[2].child, Some(1));
    }

    #[test]
    fn hostile_answers_are_bounded() {
        let s = forme_schema();
        let many: Vec<Value> = (0..5000).map(|_| json!(1)).collect();
        let errors = validate(&s.schema, &json!({"nodes": many, "matches": []}));
        assert_eq!(errors.len(), MAX_ERROR_LINES + 1);
        assert_eq!(errors.last().unwrap(), "$: … and 4900 more errors");
        let huge: Vec<Value> = (0..MAX_ARRAY_ITEMS + 1).map(|_| json!("f")).collect();
        let errors = validate(
            &s.schema,
            &json!({"nodes": [{"id": "a", "kind": "test", "wake_source": "self",
                               "requires": [], "maintains": huge}], "matches": []}),
        );
        assert_eq!(
            errors,
            vec!["$.nodes[0].maintains: has 10001 items (at most 10000)"]
        );
        // Odd keys are quoted in paths.
        let errors = validate(&s.schema, &json!({"nodes": [], "matches": [], "a b\n": 1}));
        assert_eq!(errors, vec!["$[\"a b\\n\"]: unknown member"]);
    }

    #[test]
    fn typed_outputs_deny_unknown_fields_even_without_the_validator() {
        let r: Result<FormeNeed, _> =
            serde_json::from_value(json!({"facet": "x", "fan_in": true, "more": 1}));
        assert!(r.is_err());
        let r: Result<FormeOutput, _> = serde_json::from_value(json!({
            "nodes": [{"id": "a", "kind": "gateway", "wake_source": "self", "requires": [],
                       "maintains": []}],
            "matches": []
        }));
        let out = r.unwrap();
        assert_eq!(out.nodes[0].wake_source, WakeSource::SelfWake);
        assert_eq!(out.nodes[0].kind, Kind::Gateway);
    }
}
