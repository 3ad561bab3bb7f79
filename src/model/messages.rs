//! Anthropic Messages wire shapes (HOST.md §5.4): the request body built from a
//! [`ModelRequest`] and the [`ModelResponse`] parsed from a response body.

use serde_json::{Map, Value, json};

use super::types::{
    Message, ModelRequest, ModelResponse, SYSTEM_SEPARATOR, ToolArguments, ToolCall, Usage,
};
use super::wire::{WireFailure, count, error_message, status_in_body};

/// The `anthropic-version` header value.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// `max_tokens` of every request unless the request sets its own budget (HOST.md §5.4).
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 16384;

/// Builds the request body (HOST.md §5.4), members in this order: `model`, `max_tokens`,
/// `system` (the first system block marked `cache_control: {"type": "ephemeral"}`, the other
/// blocks joined with `"\n\n---\n\n"` as a second block), `messages` (consecutive user texts and
/// tool results merged into one user message; assistant turns as `text` + `tool_use` blocks),
/// `tools` (offered tools, plus `submit_<name>` when an output schema is set), `tool_choice`
/// (`{"type": "tool", "name": "submit_<name>"}` with an output schema, `{"type": "auto"}` with
/// tools), and `temperature` only when set. `reasoning_effort` is not sent (HOST.md §13 item 3).
pub(crate) fn request_body(req: &ModelRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(req.model.clone()));
    body.insert(
        "max_tokens".into(),
        json!(req.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if let Some((first, rest)) = req.system.split_first() {
        let mut blocks = vec![json!({
            "type": "text", "text": first, "cache_control": {"type": "ephemeral"}
        })];
        if !rest.is_empty() {
            blocks.push(json!({"type": "text", "text": rest.join(SYSTEM_SEPARATOR)}));
        }
        body.insert("system".into(), Value::Array(blocks));
    }
    body.insert("messages".into(), Value::Array(messages(&req.messages)));
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    if let Some(schema) = &req.output_schema {
        let name = schema.submit_tool_name();
        tools.push(json!({
            "name": name,
            "description": format!(
                "Submit your complete answer as the {} object; the input must match the schema exactly.",
                schema.name
            ),
            "input_schema": schema.schema,
        }));
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), json!({"type": "tool", "name": name}));
    } else if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), json!({"type": "auto"}));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    Value::Object(body)
}

fn messages(history: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in history {
        let (role, blocks) = match m {
            Message::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
            Message::Tool {
                call_id,
                content,
                is_error,
            } => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                if *is_error {
                    block["is_error"] = Value::Bool(true);
                }
                ("user", vec![block])
            }
            Message::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if let Some(t) = text.as_deref().filter(|t| !t.is_empty()) {
                    blocks.push(json!({"type": "text", "text": t}));
                }
                for c in tool_calls {
                    let input = match &c.arguments {
                        ToolArguments::Json(v @ Value::Object(_)) => v.clone(),
                        _ => json!({}),
                    };
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                if blocks.is_empty() {
                    continue;
                }
                ("assistant", blocks)
            }
        };
        match out.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// Maps a Messages `usage` object to the neutral [`Usage`]: `input = input_tokens +
/// cache_creation_input_tokens + cache_read_input_tokens`, `cached_input =
/// cache_read_input_tokens`, `cache_write = cache_creation_input_tokens`, `output =
/// output_tokens`; absent or bad counts are 0. [`Usage::tokens`] then gives `reused =
/// cache_read_input_tokens` and `fresh = input_tokens + cache_creation_input_tokens +
/// output_tokens` (RUNTIME.md §8.9).
pub fn usage(u: Option<&Value>) -> Usage {
    let Some(u) = u else {
        return Usage::default();
    };
    let input = count(u.get("input_tokens"));
    let write = count(u.get("cache_creation_input_tokens"));
    let read = count(u.get("cache_read_input_tokens"));
    Usage {
        input: input.saturating_add(write).saturating_add(read),
        cached_input: read,
        cache_write: write,
        output: count(u.get("output_tokens")),
    }
}

/// The HTTP status an Anthropic error type stands for, when a 2xx body carries one.
fn status_of_error_type(kind: &str) -> Option<u16> {
    Some(match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => return None,
    })
}

/// Parses a 2xx response body (HOST.md §5.4): `content` blocks (`text` concatenated, `tool_use`
/// as tool calls, other block types ignored), `stop_reason` and `usage`.
///
/// Failures: an error body (`type: "error"`, or an `error` object without `content`) →
/// [`WireFailure::ErrorBody`] with the status its error type stands for (502 when unknown);
/// anything else unusable → [`WireFailure::Malformed`].
pub(crate) fn parse_response(body: &Value) -> Result<ModelResponse, WireFailure> {
    let Some(obj) = body.as_object() else {
        return Err(WireFailure::Malformed(
            "response is not a JSON object".into(),
        ));
    };
    let is_error_type = obj.get("type").and_then(Value::as_str) == Some("error");
    let error = obj.get("error").filter(|e| !e.is_null());
    if is_error_type || (error.is_some() && obj.get("content").is_none()) {
        let status = error
            .and_then(|e| {
                e.get("type")
                    .and_then(Value::as_str)
                    .and_then(status_of_error_type)
                    .or_else(|| status_in_body(e))
            })
            .unwrap_or(502);
        return Err(WireFailure::ErrorBody {
            status,
            message: error_message(body).unwrap_or_else(|| "error without a message".into()),
        });
    }
    let Some(content) = obj.get("content").and_then(Value::as_array) else {
        return Err(WireFailure::Malformed("content is missing".into()));
    };
    let mut text: Option<String> = None;
    let mut tool_calls = Vec::new();
    for (i, block) in content.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = block.get("text").and_then(Value::as_str).unwrap_or("");
                text.get_or_insert_with(String::new).push_str(t);
            }
            Some("tool_use") => {
                let Some(name) = block.get("name").and_then(Value::as_str) else {
                    return Err(WireFailure::Malformed(format!(
                        "content[{i}] tool_use has no name"
                    )));
                };
                let id = block
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .unwrap_or_else(|| format!("call_{i}"));
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                tool_calls.push(ToolCall {
                    id,
                    name: name.to_string(),
                    arguments: ToolArguments::Json(input),
                });
            }
            _ => {}
        }
    }
    Ok(ModelResponse {
        text,
        tool_calls,
        usage: usage(obj.get("usage")),
        stop_reason: obj
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(String::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{OutputSchema, TokenCost, ToolSpec};

    #[test]
    fn compile_body_shape() {
        let req = ModelRequest {
            purpose: "compile:forme".into(),
            model: "claude-haiku-4-5".into(),
            system: vec!["SYS".into(), "PRE".into()],
            messages: vec![Message::user("evidence"), Message::user("task")],
            output_schema: Some(OutputSchema {
                name: "forme_output".into(),
                schema: json!({"type": "object"}),
            }),
            reasoning_effort: Some("high".into()),
            ..Default::default()
        };
        let body = request_body(&req);
        assert_eq!(body["max_tokens"], 16384);
        assert_eq!(
            body["system"],
            json!([
                {"type": "text", "text": "SYS", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "PRE"}
            ])
        );
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "evidence"}, {"type": "text", "text": "task"}]}])
        );
        assert_eq!(body["tools"][0]["name"], "submit_forme_output");
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "submit_forme_output"})
        );
        assert!(body.get("reasoning_effort").is_none());
        assert!(body.get("temperature").is_none());
        assert!(body.get("stream").is_none());
    }

    #[test]
    fn render_history_merges_user_side_blocks() {
        let req = ModelRequest {
            model: "m".into(),
            system: vec!["S".into(), "C".into(), "W".into()],
            messages: vec![
                Message::user("ptr"),
                Message::Assistant {
                    text: Some("thinking".into()),
                    tool_calls: vec![
                        ToolCall {
                            id: "t1".into(),
                            name: "wm_list".into(),
                            arguments: ToolArguments::Json(json!({})),
                        },
                        ToolCall {
                            id: "t2".into(),
                            name: "ws_write".into(),
                            arguments: ToolArguments::Raw("{".into()),
                        },
                    ],
                },
                Message::tool_result("t1", "{}", false),
                Message::tool_result("t2", "{\"error\":\"x\"}", true),
                Message::Assistant {
                    text: None,
                    tool_calls: vec![],
                },
                Message::user("continue"),
            ],
            tools: vec![ToolSpec {
                name: "wm_list".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            temperature: Some(0.3),
            ..Default::default()
        };
        let body = request_body(&req);
        assert_eq!(body["system"][1]["text"], "C\n\n---\n\nW");
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3, "{body}");
        assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
        assert_eq!(msgs[1]["content"][2]["input"], json!({}));
        assert_eq!(
            msgs[2]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "t1", "content": "{}"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "{\"error\":\"x\"}", "is_error": true},
                {"type": "text", "text": "continue"}
            ])
        );
        assert_eq!(body["tool_choice"], json!({"type": "auto"}));
        assert_eq!(body["temperature"], json!(0.3));
    }

    #[test]
    fn parses_blocks_and_usage() {
        let body = json!({
            "id": "msg_1", "type": "message", "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "…"},
                {"type": "text", "text": "a"},
                {"type": "tool_use", "id": "toolu_1", "name": "finish", "input": {"status": "done"}},
                {"type": "text", "text": "b"}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 900}
        });
        let r = parse_response(&body).unwrap();
        assert_eq!(r.text.as_deref(), Some("ab"));
        assert_eq!(r.tool_calls[0].name, "finish");
        assert_eq!(r.stop_reason.as_deref(), Some("tool_use"));
        assert_eq!(
            r.usage.tokens(),
            TokenCost {
                fresh: 115,
                reused: 900
            }
        );
    }

    #[test]
    fn failures_are_classified() {
        assert_eq!(
            parse_response(
                &json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
            ),
            Err(WireFailure::ErrorBody {
                status: 529,
                message: "busy".into()
            })
        );
        assert_eq!(
            parse_response(&json!({"error": {"type": "weird", "message": "m"}})),
            Err(WireFailure::ErrorBody {
                status: 502,
                message: "m".into()
            })
        );
        for bad in [
            json!("x"),
            json!({}),
            json!({"content": "text"}),
            json!({"content": [{"type": "tool_use", "id": "x"}]}),
        ] {
            assert!(
                matches!(parse_response(&bad), Err(WireFailure::Malformed(_))),
                "{bad}"
            );
        }
        let r = parse_response(&json!({"content": []})).unwrap();
        assert_eq!(r.text, None);
        assert!(r.tool_calls.is_empty());
    }
}
