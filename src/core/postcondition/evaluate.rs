//! Evaluation of a violation predicate over facts (RUNTIME.md §6.1).

use super::model::a_type;
use super::{Comparison, Facts, Predicate};
use crate::format::json::Value;

/// The result of evaluating a violation predicate (RUNTIME.md §6.1). A deterministic
/// postcondition passes only on `NotTripped`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The violation holds.
    Tripped,
    /// The violation does not hold: the postcondition passes.
    NotTripped,
    /// Undecidable (a missing fact, a non-number in an ordering comparison).
    Indeterminate,
}

impl Outcome {
    /// `tripped`, `not-tripped` or `indeterminate`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Tripped => "tripped",
            Outcome::NotTripped => "not-tripped",
            Outcome::Indeterminate => "indeterminate",
        }
    }
}

/// Evaluates `predicate` over `facts` (RUNTIME.md §6.1).
pub fn evaluate(predicate: &Predicate, facts: &Facts) -> Outcome {
    evaluate_explained(predicate, facts).0
}

/// Like [`evaluate`], with the reason of an `Indeterminate` outcome (the first undecidable
/// leaf in child order; wording in the module docs). The reason is `None` otherwise.
pub fn evaluate_explained(predicate: &Predicate, facts: &Facts) -> (Outcome, Option<String>) {
    match predicate {
        Predicate::Leaf { kind, fact, value } => eval_leaf(*kind, fact, value, facts),
        Predicate::And(children) => {
            if children.is_empty() {
                return (Outcome::Indeterminate, Some("empty 'and'".to_string()));
            }
            let mut undecided = None;
            for c in children {
                match evaluate_explained(c, facts) {
                    (Outcome::NotTripped, _) => return (Outcome::NotTripped, None),
                    (Outcome::Indeterminate, why) => {
                        if undecided.is_none() {
                            undecided = Some(why);
                        }
                    }
                    (Outcome::Tripped, _) => {}
                }
            }
            match undecided {
                Some(why) => (Outcome::Indeterminate, why),
                None => (Outcome::Tripped, None),
            }
        }
        Predicate::Or(children) => {
            if children.is_empty() {
                return (Outcome::Indeterminate, Some("empty 'or'".to_string()));
            }
            let mut undecided = None;
            for c in children {
                match evaluate_explained(c, facts) {
                    (Outcome::Tripped, _) => return (Outcome::Tripped, None),
                    (Outcome::Indeterminate, why) => {
                        if undecided.is_none() {
                            undecided = Some(why);
                        }
                    }
                    (Outcome::NotTripped, _) => {}
                }
            }
            match undecided {
                Some(why) => (Outcome::Indeterminate, why),
                None => (Outcome::NotTripped, None),
            }
        }
        Predicate::Not(child) => match evaluate_explained(child, facts) {
            (Outcome::Tripped, _) => (Outcome::NotTripped, None),
            (Outcome::NotTripped, _) => (Outcome::Tripped, None),
            indeterminate => indeterminate,
        },
    }
}

/// Strict equality: same JSON type and value; numbers as doubles; `null` equals only `null`.
fn strict_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        _ => false,
    }
}

fn eval_leaf(
    kind: Comparison,
    fact: &str,
    value: &Value,
    facts: &Facts,
) -> (Outcome, Option<String>) {
    let Some(actual) = facts.get(fact) else {
        return (Outcome::Indeterminate, Some(format!("fact {fact} missing")));
    };
    let verdict = |b: bool| {
        if b {
            (Outcome::Tripped, None)
        } else {
            (Outcome::NotTripped, None)
        }
    };
    match kind {
        Comparison::Equals => verdict(strict_equal(actual, value)),
        Comparison::NotEquals => verdict(!strict_equal(actual, value)),
        Comparison::GreaterThanOrEqual | Comparison::LessThan => {
            let a = match actual {
                Value::Number(a) if a.is_finite() => *a,
                Value::Number(_) => {
                    return (
                        Outcome::Indeterminate,
                        Some(format!("fact {fact} is not a finite number")),
                    );
                }
                other => {
                    return (
                        Outcome::Indeterminate,
                        Some(format!("fact {fact} is {}, not a number", a_type(other))),
                    );
                }
            };
            let b = match value {
                Value::Number(b) if b.is_finite() => *b,
                Value::Number(_) => {
                    return (
                        Outcome::Indeterminate,
                        Some(format!(
                            "comparison value for fact {fact} is not a finite number"
                        )),
                    );
                }
                other => {
                    return (
                        Outcome::Indeterminate,
                        Some(format!(
                            "comparison value for fact {fact} is {}, not a number",
                            a_type(other)
                        )),
                    );
                }
            };
            verdict(if kind == Comparison::GreaterThanOrEqual {
                a >= b
            } else {
                a < b
            })
        }
    }
}
