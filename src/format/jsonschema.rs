//! The one validator for the small JSON-Schema subset the project's own schemas use: the
//! structured-output schemas of the compile sessions (RUNTIME.md §3.2.2) and the tool
//! parameter schemas of renders (§8.5, §8.6). No general JSON-Schema support is needed or
//! given (§3.2.2: no validator crate).
//!
//! Keywords: `type` (a name or a list of names; `integer` is any integral number), `enum`,
//! `properties`, `required`, `additionalProperties: false`, `items` and `anyOf` (the first
//! branch whose type admits the value is checked; with none, the union of the branch types is
//! expected). A required member that is absent passes when its schema admits `null` (absent
//! nullable members count as `null`, §3.2.2 and §8.6). Anything else in a schema is ignored.
//!
//! [`check`] walks a value and returns every [`Violation`] with its JSON path (`$`, `$.a`,
//! `$.a[2]`, `$["odd key"]`) in the [`MemberOrder`] asked for. Callers word the violations
//! (the compile repair lines and the render tools' error results keep their own wording).

use serde_json::Value;

/// The order in which an object's members are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemberOrder {
    /// Each property in schema order (its violations, or its absence), then the unknown
    /// members in value order.
    Properties,
    /// The absent required members in `required` order, then the unknown members, then the
    /// known members in value order.
    RequiredFirst,
}

/// How [`check`] walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Options {
    /// Member order.
    pub order: MemberOrder,
    /// An array with more elements is one [`ViolationKind::TooManyItems`] and is not descended
    /// into. `None`: no limit.
    pub(crate) max_items: Option<usize>,
    /// Most violations kept; further ones are only counted ([`Report::dropped`]).
    pub(crate) max_violations: usize,
}

/// What is wrong at a [`Violation`]'s path.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ViolationKind<'a> {
    /// The value's type is not among `expected` (schema type names).
    Type {
        /// The admitted type names, in schema order (`anyOf` branches flattened).
        expected: Vec<&'a str>,
        /// The value.
        found: &'a Value,
    },
    /// The value is not one of the `enum` values.
    Enum {
        /// The admitted values.
        allowed: &'a [Value],
        /// The value.
        found: &'a Value,
    },
    /// A required member is absent (the path is the object's).
    Missing {
        /// The member name.
        key: &'a str,
    },
    /// A member `additionalProperties: false` forbids (the path is the object's).
    Unknown {
        /// The member name.
        key: &'a str,
    },
    /// An array longer than [`Options::max_items`].
    TooManyItems {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// One violation: the JSON path of the value (of the object, for a member that is missing or
/// unknown) and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Violation<'a> {
    /// `$`-rooted JSON path.
    pub path: String,
    /// What is wrong.
    pub kind: ViolationKind<'a>,
}

/// The result of [`check`].
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Report<'a> {
    /// The first [`Options::max_violations`] violations, in walk order.
    pub violations: Vec<Violation<'a>>,
    /// How many more were found.
    pub dropped: usize,
}

impl Report<'_> {
    /// True when the value is valid.
    #[cfg(test)]
    pub(crate) fn is_valid(&self) -> bool {
        self.violations.is_empty() && self.dropped == 0
    }
}

/// Checks `value` against `schema` (see the module docs).
pub(crate) fn check<'a>(schema: &'a Value, value: &'a Value, options: &Options) -> Report<'a> {
    let mut walk = Walk {
        options,
        report: Report::default(),
    };
    walk.check(schema, value, "$");
    walk.report
}

/// `path.key`, or `path["key"]` when the key is not a plain identifier (`[A-Za-z0-9_-]+`).
pub(crate) fn member_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::String(key.to_string()))
    }
}

/// The schema's type names (`type` as a name or a list).
pub(crate) fn schema_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The JSON type name of a value (`null`, `boolean`, `number`, `string`, `array`, `object`;
/// integers are `number`).
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// True for integral numbers (`3`, `3.0`; not `3.5`).
pub(crate) fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    }
}

/// True when the type name admits the value.
pub(crate) fn type_matches(name: &str, v: &Value) -> bool {
    match name {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "number" => v.is_number(),
        "integer" => is_integer(v),
        "string" => v.is_string(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => false,
    }
}

/// True when `schema` admits `null` (a `null` type, or an `anyOf` branch that does).
pub(crate) fn admits_null(schema: &Value) -> bool {
    if schema_types(schema).contains(&"null") {
        return true;
    }
    schema
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|branches| branches.iter().any(admits_null))
}

struct Walk<'o, 'a> {
    options: &'o Options,
    report: Report<'a>,
}

impl<'a> Walk<'_, 'a> {
    fn push(&mut self, path: &str, kind: ViolationKind<'a>) {
        if self.report.violations.len() < self.options.max_violations {
            self.report.violations.push(Violation {
                path: path.to_string(),
                kind,
            });
        } else {
            self.report.dropped += 1;
        }
    }

    fn check(&mut self, schema: &'a Value, v: &'a Value, path: &str) {
        if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
            let fitting = branches
                .iter()
                .find(|b| schema_types(b).iter().any(|t| type_matches(t, v)));
            match fitting {
                Some(b) => self.check(b, v, path),
                None => {
                    let expected = branches.iter().flat_map(schema_types).collect();
                    self.push(path, ViolationKind::Type { expected, found: v });
                }
            }
            return;
        }
        let types = schema_types(schema);
        if !types.is_empty() && !types.iter().any(|t| type_matches(t, v)) {
            let expected = types;
            self.push(path, ViolationKind::Type { expected, found: v });
            return;
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
            && !allowed.contains(v)
        {
            self.push(path, ViolationKind::Enum { allowed, found: v });
            return;
        }
        match v {
            Value::Object(members) => self.object(schema, members, path),
            Value::Array(items) => self.array(schema, items, path),
            _ => {}
        }
    }

    fn object(
        &mut self,
        schema: &'a Value,
        members: &'a serde_json::Map<String, Value>,
        path: &str,
    ) {
        let props = schema.get("properties").and_then(Value::as_object);
        let required: Vec<&'a str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let missing = |key: &str| {
            !members.contains_key(key) && !props.and_then(|p| p.get(key)).is_some_and(admits_null)
        };
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        let unknown = members
            .keys()
            .filter(|k| closed && !props.is_some_and(|p| p.contains_key(*k)));
        match self.options.order {
            MemberOrder::Properties => {
                for (key, sub) in props.into_iter().flatten() {
                    match members.get(key) {
                        Some(x) => self.check(sub, x, &member_path(path, key)),
                        None if required.contains(&key.as_str()) && missing(key) => {
                            self.push(path, ViolationKind::Missing { key });
                        }
                        None => {}
                    }
                }
                for key in required
                    .iter()
                    .filter(|k| !props.is_some_and(|p| p.contains_key(**k)))
                {
                    if missing(key) {
                        self.push(path, ViolationKind::Missing { key });
                    }
                }
                for key in unknown {
                    self.push(path, ViolationKind::Unknown { key });
                }
            }
            MemberOrder::RequiredFirst => {
                for key in required.iter().filter(|k| missing(k)) {
                    self.push(path, ViolationKind::Missing { key });
                }
                for key in unknown {
                    self.push(path, ViolationKind::Unknown { key });
                }
                for (key, x) in members {
                    if let Some(sub) = props.and_then(|p| p.get(key)) {
                        self.check(sub, x, &member_path(path, key));
                    }
                }
            }
        }
    }

    fn array(&mut self, schema: &'a Value, items: &'a [Value], path: &str) {
        if let Some(max) = self.options.max_items
            && items.len() > max
        {
            let len = items.len();
            self.push(path, ViolationKind::TooManyItems { len, max });
            return;
        }
        if let Some(item_schema) = schema.get("items") {
            for (i, x) in items.iter().enumerate() {
                self.check(item_schema, x, &format!("{path}[{i}]"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object", "additionalProperties": false,
            "required": ["a", "b", "n"],
            "properties": {
                "a": {"type": "string", "enum": ["x", "y"]},
                "b": {"type": "array", "items": {"type": "integer"}},
                "n": {"anyOf": [{"type": "object", "properties": {}, "required": ["k"]},
                                {"type": "null"}]},
                "o": {"type": ["string", "null"]}
            }
        })
    }

    fn opts(order: MemberOrder) -> Options {
        Options {
            order,
            max_items: Some(3),
            max_violations: 100,
        }
    }

    fn lines(r: &Report<'_>) -> Vec<String> {
        r.violations
            .iter()
            .map(|v| match &v.kind {
                ViolationKind::Type { expected, found } => {
                    format!("{} type {expected:?} {found}", v.path)
                }
                ViolationKind::Enum { found, .. } => format!("{} enum {found}", v.path),
                ViolationKind::Missing { key } => format!("{} missing {key}", v.path),
                ViolationKind::Unknown { key } => format!("{} unknown {key}", v.path),
                ViolationKind::TooManyItems { len, .. } => format!("{} items {len}", v.path),
            })
            .collect()
    }

    #[test]
    fn both_orders_find_the_same_violations() {
        let s = schema();
        let v = json!({"z b": 1, "b": [1, 2.0, 2.5], "n": {"j": 1}});
        let by_props = check(&s, &v, &opts(MemberOrder::Properties));
        assert_eq!(
            lines(&by_props),
            [
                "$ missing a",
                "$.b[2] type [\"integer\"] 2.5",
                "$.n missing k",
                "$ unknown z b",
            ]
        );
        let required_first = check(&s, &v, &opts(MemberOrder::RequiredFirst));
        assert_eq!(
            lines(&required_first),
            [
                "$ missing a",
                "$ unknown z b",
                "$.b[2] type [\"integer\"] 2.5",
                "$.n missing k",
            ]
        );
        assert!(!required_first.is_valid());
    }

    #[test]
    fn nullable_members_may_be_absent_and_any_of_unions_types() {
        let s = schema();
        let props = opts(MemberOrder::Properties);
        let ok = json!({"a": "x", "b": [], "n": null});
        assert!(check(&s, &ok, &props).is_valid());
        let ok = json!({"a": "x", "b": [], "n": {"k": 1}, "o": null});
        assert!(check(&s, &ok, &props).is_valid());
        let bad = json!({"a": "z", "b": [], "n": 3});
        let r = check(&s, &bad, &props);
        assert_eq!(
            lines(&r),
            ["$.a enum \"z\"", "$.n type [\"object\", \"null\"] 3"]
        );
    }

    #[test]
    fn hostile_values_are_bounded() {
        let s = schema();
        let long = json!({"a": "x", "b": [1, 2, 3, 4], "n": null});
        let r = check(&s, &long, &opts(MemberOrder::Properties));
        assert_eq!(lines(&r), ["$.b items 4"]);
        let many = Value::Array((0..50).map(|_| json!("s")).collect());
        let ints = json!({"type": "array", "items": {"type": "integer"}});
        let options = Options {
            order: MemberOrder::Properties,
            max_items: None,
            max_violations: 10,
        };
        let r = check(&ints, &many, &options);
        assert_eq!((r.violations.len(), r.dropped), (10, 40));
        assert_eq!(member_path("$", "a b\n"), "$[\"a b\\n\"]");
        assert!(is_integer(&json!(1e300)) && is_integer(&json!(u64::MAX)));
        assert!(!is_integer(&json!(0.5)) && !is_integer(&json!("1")));
    }
}
