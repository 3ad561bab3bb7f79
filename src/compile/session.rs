//! Session mechanics common to the three compile sessions (RUNTIME.md §3.2): the request
//! (system = `[system prompt, compile-role preamble]`, user 1 = the evidence, user 2 = the task,
//! the output schema, `X-Reactor-Purpose`), the validation and repair loop (at most
//! [`MAX_REPAIR_TURNS`] repair turns), and per-step cost.

use std::fmt;

use serde_json::Value;

use super::prompts::{PREAMBLE, repair_message};
use crate::model::{Message, ModelClient, ModelError, ModelRequest, OutputSchema, TokenCost};

/// Most repair turns one session sends (three answers in all, RUNTIME.md §3.2.3).
pub(crate) const MAX_REPAIR_TURNS: u32 = 2;

/// One compile step (RUNTIME.md §3.2.4 step labels).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// The Forme session (`forme`).
    Forme,
    /// The canonicalizer session of a node (`canonicalizer:<node>`).
    Canonicalizer(String),
    /// The postcondition session of a node (`postcondition:<node>`).
    Postcondition(String),
}

impl Step {
    /// The step kind without the node: `forme`, `canonicalizer` or `postcondition` (the `step`
    /// member of the compile report's `step_costs`, HOST.md §8.3).
    pub fn kind(&self) -> &'static str {
        match self {
            Step::Forme => "forme",
            Step::Canonicalizer(_) => "canonicalizer",
            Step::Postcondition(_) => "postcondition",
        }
    }

    /// The node of a per-node step.
    pub fn node(&self) -> Option<&str> {
        match self {
            Step::Forme => None,
            Step::Canonicalizer(n) | Step::Postcondition(n) => Some(n),
        }
    }

    /// The step label: `forme`, `canonicalizer:<node>` or `postcondition:<node>`.
    pub fn label(&self) -> String {
        match self.node() {
            None => self.kind().to_string(),
            Some(n) => format!("{}:{n}", self.kind()),
        }
    }

    /// The request purpose sent as `X-Reactor-Purpose`: `compile:` + the label (HOST.md §5.2).
    pub fn purpose(&self) -> String {
        format!("compile:{}", self.label())
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// The cost of one step: the usage of every request it sent (repairs included) mapped to
/// `{fresh, reused}` and summed (RUNTIME.md §3.2.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepCost {
    /// The step.
    pub step: Step,
    /// Summed tokens.
    pub tokens: TokenCost,
    /// Answers received (1 to 3; repair turns are answers 2 and 3).
    pub answers: u32,
}

/// Model settings of the compile sessions (RUNTIME.md §3.2.4, HOST.md §4.2).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SessionSettings {
    /// The system prompt text (the embedded one, or the `REACTOR_SKILL_PATH` replacement).
    pub system_prompt: String,
    /// The compile model id (`model.compile_model`).
    pub model: String,
    /// Sent only when set.
    pub temperature: Option<f64>,
    /// Sent only when set.
    pub reasoning_effort: Option<String>,
}

/// Why a session failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SessionFailureKind {
    /// The provider call failed after its retries; the error's `Display` is the hint.
    Model(Box<ModelError>),
    /// The third answer still failed validation or lowering: its error list.
    Exhausted(Vec<String>),
}

/// A failed session: the step, why, and the tokens it spent before failing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SessionFailure {
    /// The step.
    pub step: Step,
    /// Why.
    pub kind: SessionFailureKind,
    /// Tokens of the answers received before the failure.
    pub tokens: TokenCost,
}

/// The first request of a session (RUNTIME.md §3.2.1): system blocks `[system prompt,
/// preamble]`, user messages `[evidence, task]`, the schema, the purpose of `step`, and the
/// optional temperature and reasoning effort.
pub(crate) fn session_request(
    settings: &SessionSettings,
    step: &Step,
    evidence: &str,
    task: &str,
    schema: &OutputSchema,
) -> ModelRequest {
    ModelRequest {
        purpose: step.purpose(),
        model: settings.model.clone(),
        system: vec![
            settings.system_prompt.clone(),
            PREAMBLE.trim_end().to_string(),
        ],
        messages: vec![Message::user(evidence), Message::user(task)],
        tools: Vec::new(),
        output_schema: Some(schema.clone()),
        temperature: settings.temperature,
        reasoning_effort: settings.reasoning_effort.clone(),
        max_output_tokens: None,
    }
}

/// Runs one session: sends the request, checks each answer with `lower` (parse and schema, then
/// the lowering checks; it returns the error lines, each naming a JSON path), and sends a repair
/// turn for a failed answer, at most [`MAX_REPAIR_TURNS`] times (RUNTIME.md §3.2.3). An answer
/// that is not JSON, is truncated or is missing fails layer 1 with one `$: …` line.
///
/// Errors: [`SessionFailure`] with the provider error, or with the last error list when the
/// third answer fails too; either way with the tokens already spent by this session.
pub(crate) fn run_session<T>(
    client: &dyn ModelClient,
    settings: &SessionSettings,
    step: &Step,
    evidence: &str,
    task: &str,
    schema: &OutputSchema,
    lower: impl Fn(&Value) -> Result<T, Vec<String>>,
) -> Result<(T, StepCost), SessionFailure> {
    let mut req = session_request(settings, step, evidence, task, schema);
    let mut tokens = TokenCost::default();
    let mut answers = 0u32;
    loop {
        let resp = client.complete(&req).map_err(|e| SessionFailure {
            step: step.clone(),
            kind: SessionFailureKind::Model(Box::new(e)),
            tokens,
        })?;
        answers += 1;
        tokens += resp.usage.tokens();
        let errors = match resp.structured_answer(schema) {
            Err(e) => vec![format!("$: {e}")],
            Ok(v) => match lower(&v) {
                Ok(t) => {
                    return Ok((
                        t,
                        StepCost {
                            step: step.clone(),
                            tokens,
                            answers,
                        },
                    ));
                }
                Err(errors) if errors.is_empty() => vec!["$: the answer was rejected".into()],
                Err(errors) => errors,
            },
        };
        if answers > MAX_REPAIR_TURNS {
            return Err(SessionFailure {
                step: step.clone(),
                kind: SessionFailureKind::Exhausted(errors),
                tokens,
            });
        }
        req.push_repair_turn(&resp, &repair_message(&schema.name, &errors));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::replay::ModelRecord;
    use crate::model::{ModelResponse, ReplayClient, ToolArguments, ToolCall, Usage};
    use serde_json::json;

    fn settings() -> SessionSettings {
        SessionSettings {
            system_prompt: "SYSTEM".into(),
            model: "compile-model".into(),
            temperature: None,
            reasoning_effort: Some("low".into()),
        }
    }

    fn schema() -> OutputSchema {
        OutputSchema {
            name: "test_output".into(),
            schema: json!({"type": "object", "properties": {"n": {"type": "integer"}},
                           "required": ["n"], "additionalProperties": false}),
        }
    }

    fn lower(v: &Value) -> Result<i64, Vec<String>> {
        let errors = super::super::schema::validate(&schema().schema, v);
        if !errors.is_empty() {
            return Err(errors);
        }
        let n = v["n"].as_i64().unwrap_or(0);
        if n < 0 {
            return Err(vec![format!("$.n: {n} is negative")]);
        }
        Ok(n)
    }

    fn text(t: &str, input: u64, cached: u64, output: u64) -> ModelResponse {
        ModelResponse {
            text: Some(t.into()),
            usage: Usage {
                input,
                cached_input: cached,
                cache_write: 0,
                output,
            },
            stop_reason: Some("stop".into()),
            ..Default::default()
        }
    }

    fn record(id: u32, request: &ModelRequest, response: ModelResponse) -> ModelRecord {
        ModelRecord {
            id: json!(id),
            request: request.clone(),
            response,
        }
    }

    #[test]
    fn request_shape_follows_3_2_1() {
        let step = Step::Canonicalizer("price-watch".into());
        let req = session_request(&settings(), &step, "EVIDENCE", "TASK", &schema());
        assert_eq!(req.purpose, "compile:canonicalizer:price-watch");
        assert_eq!(req.model, "compile-model");
        assert_eq!(req.system[0], "SYSTEM");
        assert!(req.system[1].starts_with("# Compile role\n"));
        assert_eq!(
            req.messages,
            vec![Message::user("EVIDENCE"), Message::user("TASK")]
        );
        assert_eq!(req.output_schema.as_ref().unwrap().name, "test_output");
        assert_eq!(req.temperature, None);
        assert_eq!(req.reasoning_effort.as_deref(), Some("low"));
        assert!(req.tools.is_empty());
        assert_eq!(Step::Forme.purpose(), "compile:forme");
        assert_eq!(Step::Postcondition("a".into()).label(), "postcondition:a");
        assert_eq!(Step::Postcondition("a".into()).kind(), "postcondition");
    }

    #[test]
    fn a_repair_turn_fixes_an_invalid_answer() {
        let step = Step::Forme;
        let first = session_request(&settings(), &step, "E", "T", &schema());
        let bad = text("{\"n\": -4}", 100, 40, 5);
        let mut second = first.clone();
        second.messages.push(Message::Assistant {
            text: Some("{\"n\": -4}".into()),
            tool_calls: vec![],
        });
        second.messages.push(Message::user(
            "Your answer cannot be used. Errors found (JSON path: problem):\n\n- $.n: -4 is negative\n\nSend a corrected, complete `test_output` answer that fixes every error above.",
        ));
        let client = ReplayClient::new(vec![
            record(1, &first, bad),
            record(2, &second, text("{\"n\": 4}", 120, 100, 3)),
        ]);
        let (n, cost) =
            run_session(&client, &settings(), &step, "E", "T", &schema(), lower).unwrap();
        assert_eq!(n, 4);
        assert_eq!(client.remaining(), 0);
        assert_eq!(cost.answers, 2);
        // (100 - 40) + 5 = 65 fresh, 40 reused; then (120 - 100) + 3 = 23 fresh, 100 reused.
        assert_eq!(
            cost.tokens,
            TokenCost {
                fresh: 88,
                reused: 140
            }
        );
    }

    #[test]
    fn three_invalid_answers_fail_with_the_last_error_list() {
        let step = Step::Postcondition("n".into());
        let mut req = session_request(&settings(), &step, "E", "T", &schema());
        let answers = [
            text("not json", 10, 0, 1),
            text("{\"n\": \"x\"}", 10, 0, 1),
            text("{\"n\": 1, \"m\": 2}", 10, 0, 1),
        ];
        let mut records = Vec::new();
        for (i, a) in answers.iter().enumerate() {
            records.push(record(i as u32, &req, a.clone()));
            let errors = match a.structured_answer(&schema()) {
                Err(e) => vec![format!("$: {e}")],
                Ok(v) => lower(&v).unwrap_err(),
            };
            req.push_repair_turn(a, &repair_message("test_output", &errors));
        }
        let client = ReplayClient::new(records);
        let err = run_session(&client, &settings(), &step, "E", "T", &schema(), lower).unwrap_err();
        assert_eq!(client.remaining(), 0);
        assert_eq!(client.calls().len(), 3);
        // The second request carried the first error (layer 1: not JSON).
        let calls = client.calls();
        match &calls[1].messages[3] {
            Message::User { text } => assert!(text.contains("- $: answer is not JSON"), "{text}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(err.step, step);
        assert_eq!(
            err.kind,
            SessionFailureKind::Exhausted(vec!["$.m: unknown member".into()])
        );
        assert_eq!(
            err.tokens,
            TokenCost {
                fresh: 33,
                reused: 0
            }
        );
    }

    #[test]
    fn forced_tool_answers_are_repaired_through_tool_results() {
        let step = Step::Forme;
        let first = session_request(&settings(), &step, "E", "T", &schema());
        let tool = |n: i64| ModelResponse {
            tool_calls: vec![ToolCall {
                id: format!("toolu_{n}"),
                name: "submit_test_output".into(),
                arguments: ToolArguments::Json(json!({"n": n})),
            }],
            stop_reason: Some("tool_use".into()),
            ..Default::default()
        };
        let mut second = first.clone();
        second.push_repair_turn(
            &tool(-1),
            &repair_message("test_output", &["$.n: -1 is negative".to_string()]),
        );
        assert!(matches!(
            second.messages[3],
            Message::Tool { is_error: true, .. }
        ));
        let client = ReplayClient::new(vec![
            record(1, &first, tool(-1)),
            record(2, &second, tool(2)),
        ]);
        let (n, cost) =
            run_session(&client, &settings(), &step, "E", "T", &schema(), lower).unwrap();
        assert_eq!((n, cost.answers), (2, 2));
    }

    #[test]
    fn provider_failures_end_the_session_with_the_tokens_spent() {
        let step = Step::Forme;
        let first = session_request(&settings(), &step, "E", "T", &schema());
        // One invalid answer, then the replay runs out: the failure keeps the first answer's
        // tokens.
        let client = ReplayClient::new(vec![record(1, &first, text("{}", 7, 0, 2))]);
        let err = run_session(&client, &settings(), &step, "E", "T", &schema(), lower).unwrap_err();
        assert_eq!(
            err.kind,
            SessionFailureKind::Model(Box::new(ModelError::ReplayExhausted))
        );
        assert_eq!(
            err.tokens,
            TokenCost {
                fresh: 9,
                reused: 0
            }
        );
        // A truncated answer is invalid, not a provider failure.
        let mut truncated = text("{\"n\": 1}", 1, 0, 1);
        truncated.stop_reason = Some("length".into());
        let client = ReplayClient::new(vec![record(1, &first, truncated)]);
        let err = run_session(&client, &settings(), &step, "E", "T", &schema(), lower).unwrap_err();
        assert_eq!(
            err.kind,
            SessionFailureKind::Model(Box::new(ModelError::ReplayExhausted))
        );
        let last = client.calls().pop().unwrap();
        match &last.messages[3] {
            Message::User { text } => {
                assert!(text.contains("- $: answer was truncated at the output limit"))
            }
            other => panic!("{other:?}"),
        }
    }
}
