//! The provider-neutral model request and response (RUNTIME.md §13.1).
//!
//! Compile sessions and the render agent loop build a [`ModelRequest`], hand it to a
//! [`ModelClient`](super::ModelClient) and read a [`ModelResponse`]; the HTTP clients map these
//! shapes to Chat Completions or Anthropic Messages (HOST.md §5.3–§5.4). The serde form of both
//! types is the `request` / `response` shape of a record file (RUNTIME.md §13.2).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The separator placed between system blocks when a protocol needs them joined into one text
/// (`"\n\n---\n\n"`, HOST.md §5.3).
pub const SYSTEM_SEPARATOR: &str = "\n\n---\n\n";

/// One model request (RUNTIME.md §13.1).
///
/// Serialized form (record files): `{"purpose", "model", "system": [text…], "messages": […],
/// "tools": […], "output_schema"?, "temperature"?, "reasoning_effort"?, "max_output_tokens"?}`;
/// absent optional fields are omitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ModelRequest {
    /// `compile:<step>` (`compile:forme`, `compile:canonicalizer:<node>`,
    /// `compile:postcondition:<node>`) or `render:<node>`; sent as `X-Reactor-Purpose`.
    pub purpose: String,
    /// The provider's model id.
    pub model: String,
    /// The system text as blocks, in order. The first block is the (cacheable) system prompt.
    /// Chat Completions joins all blocks with [`SYSTEM_SEPARATOR`] into one system message;
    /// Anthropic Messages sends the first block with `cache_control: ephemeral` and the remaining
    /// blocks, joined with the separator, as a second block. Compile sessions pass
    /// `[system prompt, compile-role preamble]`; renders pass
    /// `[system prompt, node contract, wake header]`.
    #[serde(default)]
    pub system: Vec<String>,
    /// The conversation so far, oldest first.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Tools offered to the model (renders); empty for compile sessions.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// The structured-output schema of a compile session (RUNTIME.md §3.2.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
    /// Sampling temperature; sent only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Reasoning effort (`none`, `low`, `medium`, `high`, …); sent only when set, and only on
    /// Chat Completions (HOST.md §13 item 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Output budget in tokens. Anthropic Messages sends it as `max_tokens` (16384 when unset,
    /// HOST.md §5.4); Chat Completions sends `max_tokens` only when set (used by
    /// `doctor --live`, HOST.md §5.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

/// One conversation entry.
///
/// Serialized as `{"role": "user", "text"}`, `{"role": "assistant", "text"?, "tool_calls"}` or
/// `{"role": "tool", "call_id", "content", "is_error"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// User text (the evidence, a task, the pointer input, a reminder or a repair request).
    User {
        /// The text.
        text: String,
    },
    /// A model turn as returned: its text and its tool calls, in order.
    Assistant {
        /// The text, when the turn had any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// The tool calls of the turn, in the order given.
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one executed tool call. Consecutive results (and user texts) are merged into
    /// one user message on Anthropic Messages.
    Tool {
        /// The `id` of the [`ToolCall`] this answers.
        call_id: String,
        /// The result JSON text (`{"error": "…"}` for errors, RUNTIME.md §8.5).
        content: String,
        /// Whether the result is an error (`is_error: true` on Anthropic Messages).
        #[serde(default)]
        is_error: bool,
    },
}

impl Message {
    /// A user text message.
    pub fn user(text: impl Into<String>) -> Message {
        Message::User { text: text.into() }
    }

    /// A tool result message.
    pub fn tool_result(
        call_id: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Message {
        Message::Tool {
            call_id: call_id.into(),
            content: content.into(),
            is_error,
        }
    }
}

/// A tool offered to the model: `{"name", "description", "parameters": <JSON Schema>}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name (`wm_read`, `finish`, …).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON Schema of the arguments object.
    pub parameters: Value,
}

/// The structured-output schema of a compile session: `{"name", "schema"}`.
///
/// Chat Completions sends it as `response_format: {type: json_schema, json_schema: {name, strict:
/// true, schema}}`; Anthropic Messages as a forced tool named `submit_<name>`
/// (HOST.md §5.3–§5.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// Schema name: `forme_output`, `canonicalizer_output` or `postcondition_output`.
    pub name: String,
    /// The JSON Schema (strict-mode compatible, RUNTIME.md §3.2.2).
    pub schema: Value,
}

impl OutputSchema {
    /// The name of the forced tool that carries the answer on Anthropic Messages:
    /// `submit_<name>`.
    pub fn submit_tool_name(&self) -> String {
        format!("submit_{}", self.name)
    }
}

/// One tool call made by the model: `{"id", "name", "arguments": {"json": …} | {"raw": "…"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (generated as `call_<n>` when the provider sent none).
    pub id: String,
    /// The tool name as sent by the model (it may name no offered tool).
    pub name: String,
    /// The arguments.
    pub arguments: ToolArguments,
}

/// Tool-call arguments: the parsed JSON value, or the raw text when it did not parse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolArguments {
    /// Arguments that parsed as JSON (normally an object).
    Json(Value),
    /// Argument text that is not JSON; the harness answers with an error result.
    Raw(String),
}

impl ToolArguments {
    /// Parses provider argument text: JSON when it parses, otherwise the raw text.
    pub fn from_text(text: &str) -> ToolArguments {
        match serde_json::from_str::<Value>(text) {
            Ok(v) => ToolArguments::Json(v),
            Err(_) => ToolArguments::Raw(text.to_string()),
        }
    }

    /// The parsed value, when the arguments were JSON.
    pub fn json(&self) -> Option<&Value> {
        match self {
            ToolArguments::Json(v) => Some(v),
            ToolArguments::Raw(_) => None,
        }
    }

    /// The argument text as sent back to Chat Completions (`function.arguments`): compact JSON,
    /// or the raw text unchanged.
    pub(crate) fn to_text(&self) -> String {
        match self {
            ToolArguments::Json(v) => v.to_string(),
            ToolArguments::Raw(s) => s.clone(),
        }
    }
}

/// Token usage of one response, normalized across protocols (all counts are tokens).
///
/// - `input`: every prompt token, including cache reads and cache writes
///   (Chat Completions `prompt_tokens`; Messages `input_tokens + cache_creation_input_tokens +
///   cache_read_input_tokens`).
/// - `cached_input`: prompt tokens served from the provider's cache (Chat Completions
///   `prompt_tokens_details.cached_tokens`; Messages `cache_read_input_tokens`).
/// - `cache_write`: prompt tokens written to the cache (Messages `cache_creation_input_tokens`;
///   0 on Chat Completions).
/// - `output`: completion tokens, reasoning included.
///
/// With this normalization one mapping, [`Usage::tokens`], reproduces both cost rules of
/// RUNTIME.md §8.9.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Usage {
    /// All prompt tokens (see above).
    #[serde(default)]
    pub input: u64,
    /// Prompt tokens read from the provider's cache.
    #[serde(default)]
    pub cached_input: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_write: u64,
    /// Output tokens.
    #[serde(default)]
    pub output: u64,
}

impl Usage {
    /// Maps the usage to receipt tokens (RUNTIME.md §8.9, HOST.md §5.5):
    /// `reused = min(cached_input, input)`, `fresh = (input − reused) + output`.
    pub fn tokens(&self) -> TokenCost {
        let reused = self.cached_input.min(self.input);
        TokenCost {
            fresh: (self.input - reused).saturating_add(self.output),
            reused,
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        self.input = self.input.saturating_add(rhs.input);
        self.cached_input = self.cached_input.saturating_add(rhs.cached_input);
        self.cache_write = self.cache_write.saturating_add(rhs.cache_write);
        self.output = self.output.saturating_add(rhs.output);
    }
}

/// Receipt tokens: `{fresh, reused}` (RUNTIME.md §11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TokenCost {
    /// Tokens the provider processed anew (prompt misses plus output).
    pub fresh: u64,
    /// Prompt tokens served from the provider's prompt cache.
    pub reused: u64,
}

impl std::ops::AddAssign for TokenCost {
    fn add_assign(&mut self, rhs: TokenCost) {
        self.fresh = self.fresh.saturating_add(rhs.fresh);
        self.reused = self.reused.saturating_add(rhs.reused);
    }
}

/// One model response (RUNTIME.md §13.1).
///
/// Serialized form (record files): `{"text"?, "tool_calls": […], "usage": {…}, "stop_reason"?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ModelResponse {
    /// The response text (Chat Completions `content`, concatenated text parts or Messages text
    /// blocks), when there was any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tool calls in the order given.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Token usage of this response.
    #[serde(default)]
    pub usage: Usage,
    /// The provider's stop reason as sent (`stop`, `tool_calls`, `length`, `end_turn`,
    /// `tool_use`, `max_tokens`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// Why a compile session's response holds no structured answer (the repair turn's text).
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// The provider cut the answer at its output budget.
    #[error("answer was truncated at the output limit")]
    Truncated,
    /// The `submit_*` call's arguments are not JSON.
    #[error("answer is not JSON")]
    RawArguments,
    /// The text is not JSON.
    #[error("answer is not JSON: {0}")]
    NotJson(serde_json::Error),
    /// Neither a `submit_*` call nor text.
    #[error("no answer in the response")]
    Missing,
}

impl ModelResponse {
    /// Whether the provider cut the answer at its output budget (`length` on Chat Completions,
    /// `max_tokens` on Messages); a compile session counts such an answer as invalid
    /// (HOST.md §5.3).
    pub fn truncated(&self) -> bool {
        matches!(
            self.stop_reason.as_deref(),
            Some("length") | Some("max_tokens")
        )
    }

    /// The structured answer of a compile session: the arguments of the `submit_<name>` tool call
    /// when there is one (Anthropic Messages), otherwise the text parsed as JSON
    /// (Chat Completions).
    ///
    /// Errors: [`AnswerError`] (one line, for the repair turn).
    pub fn structured_answer(&self, schema: &OutputSchema) -> Result<Value, AnswerError> {
        if self.truncated() {
            return Err(AnswerError::Truncated);
        }
        let submit = schema.submit_tool_name();
        if let Some(call) = self.tool_calls.iter().find(|c| c.name == submit) {
            return match &call.arguments {
                ToolArguments::Json(v) => Ok(v.clone()),
                ToolArguments::Raw(_) => Err(AnswerError::RawArguments),
            };
        }
        match self.text.as_deref().map(str::trim) {
            Some(t) if !t.is_empty() => serde_json::from_str(t).map_err(AnswerError::NotJson),
            _ => Err(AnswerError::Missing),
        }
    }

    /// The assistant turn to append to the conversation: this response's text and tool calls.
    pub fn to_message(&self) -> Message {
        Message::Assistant {
            text: self.text.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

impl ModelRequest {
    /// Appends a compile-session repair turn (RUNTIME.md §3.2.3, HOST.md §5.3–§5.4): the
    /// assistant answer as returned, then the error list — as a `tool_result` with `is_error`
    /// answering the forced `submit_*` call when the answer came as a tool call (Anthropic
    /// Messages), otherwise as a user message (Chat Completions).
    pub fn push_repair_turn(&mut self, answer: &ModelResponse, errors: &str) {
        self.messages.push(answer.to_message());
        match answer.tool_calls.first() {
            Some(call) => {
                let id = call.id.clone();
                self.messages.push(Message::tool_result(id, errors, true));
                // Every other tool_use of the turn needs an answer too on Messages.
                for extra in answer.tool_calls.iter().skip(1) {
                    self.messages.push(Message::tool_result(
                        extra.id.clone(),
                        "{\"error\": \"only the submit tool is available\"}",
                        true,
                    ));
                }
            }
            None => self.messages.push(Message::user(errors)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_maps_to_tokens() {
        let u = Usage {
            input: 100,
            cached_input: 30,
            cache_write: 0,
            output: 7,
        };
        assert_eq!(
            u.tokens(),
            TokenCost {
                fresh: 77,
                reused: 30
            }
        );
        // A cached count above the prompt is clamped.
        let u = Usage {
            input: 10,
            cached_input: 50,
            cache_write: 0,
            output: 1,
        };
        assert_eq!(
            u.tokens(),
            TokenCost {
                fresh: 1,
                reused: 10
            }
        );
        let mut sum = TokenCost::default();
        sum += TokenCost {
            fresh: 3,
            reused: 4,
        };
        sum += TokenCost {
            fresh: u64::MAX,
            reused: 1,
        };
        assert_eq!(
            sum,
            TokenCost {
                fresh: u64::MAX,
                reused: 5
            }
        );
    }

    #[test]
    fn request_round_trips_through_serde() {
        let req = ModelRequest {
            purpose: "render:a".into(),
            model: "m".into(),
            system: vec!["s".into()],
            messages: vec![
                Message::user("hi"),
                Message::Assistant {
                    text: None,
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "wm_list".into(),
                        arguments: ToolArguments::Json(json!({})),
                    }],
                },
                Message::tool_result("c1", "{}", false),
            ],
            tools: vec![],
            output_schema: None,
            temperature: Some(0.5),
            reasoning_effort: None,
            max_output_tokens: None,
        };
        let v = serde_json::to_value(&req).unwrap();
        assert_eq!(v["messages"][0], json!({"role": "user", "text": "hi"}));
        assert_eq!(
            v["messages"][1]["tool_calls"][0]["arguments"],
            json!({"json": {}})
        );
        assert!(v.get("reasoning_effort").is_none());
        let back: ModelRequest = serde_json::from_value(v).unwrap();
        assert_eq!(back, req);
    }

    #[test]
    fn structured_answer_prefers_submit_tool_and_reports_errors() {
        let schema = OutputSchema {
            name: "forme_output".into(),
            schema: json!({}),
        };
        let r = ModelResponse {
            tool_calls: vec![ToolCall {
                id: "t".into(),
                name: "submit_forme_output".into(),
                arguments: ToolArguments::Json(json!({"nodes": []})),
            }],
            ..Default::default()
        };
        assert_eq!(r.structured_answer(&schema).unwrap(), json!({"nodes": []}));
        let r = ModelResponse {
            text: Some(" {\"a\":1} ".into()),
            ..Default::default()
        };
        assert_eq!(r.structured_answer(&schema).unwrap(), json!({"a": 1}));
        let r = ModelResponse {
            text: Some("{\"a\":".into()),
            ..Default::default()
        };
        assert!(
            r.structured_answer(&schema)
                .unwrap_err()
                .to_string()
                .starts_with("answer is not JSON")
        );
        let r = ModelResponse {
            text: Some("{}".into()),
            stop_reason: Some("length".into()),
            ..Default::default()
        };
        assert!(
            r.structured_answer(&schema)
                .unwrap_err()
                .to_string()
                .contains("truncated")
        );
        assert_eq!(
            ModelResponse::default()
                .structured_answer(&schema)
                .unwrap_err()
                .to_string(),
            "no answer in the response"
        );
    }

    #[test]
    fn repair_turn_shapes_follow_the_answer() {
        let mut req = ModelRequest::default();
        let text_answer = ModelResponse {
            text: Some("{}".into()),
            ..Default::default()
        };
        req.push_repair_turn(&text_answer, "$.nodes: missing");
        assert_eq!(req.messages[1], Message::user("$.nodes: missing"));
        let mut req = ModelRequest::default();
        let tool_answer = ModelResponse {
            tool_calls: vec![ToolCall {
                id: "toolu_1".into(),
                name: "submit_x".into(),
                arguments: ToolArguments::Json(json!({})),
            }],
            ..Default::default()
        };
        req.push_repair_turn(&tool_answer, "bad");
        assert_eq!(
            req.messages[1],
            Message::tool_result("toolu_1", "bad", true)
        );
    }

    #[test]
    fn tool_arguments_parse_or_keep_raw() {
        assert_eq!(ToolArguments::from_text("{\"a\":1}").to_text(), "{\"a\":1}");
        assert_eq!(
            ToolArguments::from_text("{oops"),
            ToolArguments::Raw("{oops".into())
        );
        assert_eq!(ToolArguments::from_text("{oops").to_text(), "{oops");
    }
}
