//! Chat Completions wire shapes (HOST.md §5.3): the request body built from a [`ModelRequest`]
//! and the [`ModelResponse`] parsed from a response body.

use serde_json::{Map, Value, json};

use super::types::{
    Message, ModelRequest, ModelResponse, SYSTEM_SEPARATOR, ToolArguments, ToolCall, Usage,
};
use super::wire::{WireFailure, count, error_message, status_in_body};

/// Builds the request body (HOST.md §5.3), members in this order: `model`, `messages`
/// (one system message holding the system blocks joined with `"\n\n---\n\n"`, then the
/// conversation), `tools` + `tool_choice: "auto"` when tools are offered, `response_format`
/// (`json_schema`, `strict: true`) when an output schema is set, `temperature` and
/// `reasoning_effort` only when set, `max_tokens` only when set, and `stream: false`.
pub(crate) fn request_body(req: &ModelRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), Value::String(req.model.clone()));
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system.join(SYSTEM_SEPARATOR)}));
    }
    for m in &req.messages {
        messages.push(match m {
            Message::User { text } => json!({"role": "user", "content": text}),
            Message::Assistant { text, tool_calls } => {
                let mut msg = Map::new();
                msg.insert("role".into(), "assistant".into());
                msg.insert(
                    "content".into(),
                    text.clone().map(Value::String).unwrap_or(Value::Null),
                );
                if !tool_calls.is_empty() {
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments.to_text()}
                            })
                        })
                        .collect();
                    msg.insert("tool_calls".into(), Value::Array(calls));
                }
                Value::Object(msg)
            }
            Message::Tool {
                call_id, content, ..
            } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        body.insert("tool_choice".into(), "auto".into());
    }
    if let Some(schema) = &req.output_schema {
        body.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": {
                "name": schema.name, "strict": true, "schema": schema.schema
            }}),
        );
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(r) = &req.reasoning_effort {
        body.insert("reasoning_effort".into(), Value::String(r.clone()));
    }
    if let Some(m) = req.max_output_tokens {
        body.insert("max_tokens".into(), json!(m));
    }
    body.insert("stream".into(), Value::Bool(false));
    Value::Object(body)
}

/// Maps a Chat Completions `usage` object (`prompt_tokens`, `completion_tokens`,
/// `prompt_tokens_details.cached_tokens`) to the neutral [`Usage`]; absent or bad counts are 0.
pub fn usage(u: Option<&Value>) -> Usage {
    let Some(u) = u else {
        return Usage::default();
    };
    Usage {
        input: count(u.get("prompt_tokens")),
        cached_input: count(
            u.get("prompt_tokens_details")
                .and_then(|d| d.get("cached_tokens")),
        ),
        cache_write: 0,
        output: count(u.get("completion_tokens")),
    }
}

/// Parses a 2xx response body (HOST.md §5.3): `choices[0].message` (`content` as a string or
/// an array of text parts, `tool_calls`, `refusal`), `finish_reason` and `usage`.
///
/// Failures: a body with an `error` object and no `choices` → [`WireFailure::ErrorBody`] (status
/// from the body, 502 when none); a non-null `refusal` → [`WireFailure::Refused`]; anything else
/// unusable → [`WireFailure::Malformed`].
pub(crate) fn parse_response(body: &Value) -> Result<ModelResponse, WireFailure> {
    let Some(obj) = body.as_object() else {
        return Err(WireFailure::Malformed(
            "response is not a JSON object".into(),
        ));
    };
    let choices = obj.get("choices").and_then(Value::as_array);
    if let Some(err) = obj.get("error").filter(|e| !e.is_null())
        && choices.is_none_or(|c| c.is_empty())
    {
        return Err(WireFailure::ErrorBody {
            status: status_in_body(err).unwrap_or(502),
            message: error_message(body).unwrap_or_else(|| "error without a message".into()),
        });
    }
    let Some(choice) = choices.and_then(|c| c.first()) else {
        return Err(WireFailure::Malformed("no choices in the response".into()));
    };
    let Some(message) = choice.get("message").and_then(Value::as_object) else {
        return Err(WireFailure::Malformed(
            "choices[0].message is missing".into(),
        ));
    };
    if let Some(refusal) = message.get("refusal").and_then(Value::as_str) {
        return Err(WireFailure::Refused(refusal.to_string()));
    }
    let text = match message.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(parts)) => {
            let mut joined = String::new();
            for part in parts {
                match part {
                    Value::String(s) => joined.push_str(s),
                    Value::Object(p) => {
                        let kind = p.get("type").and_then(Value::as_str).unwrap_or("text");
                        if kind == "text"
                            && let Some(t) = p.get("text").and_then(Value::as_str)
                        {
                            joined.push_str(t);
                        }
                    }
                    _ => {}
                }
            }
            Some(joined)
        }
        Some(_) => {
            return Err(WireFailure::Malformed(
                "choices[0].message.content is neither text nor parts".into(),
            ));
        }
    };
    let mut tool_calls = Vec::new();
    match message.get("tool_calls") {
        None | Some(Value::Null) => {}
        Some(Value::Array(calls)) => {
            for (i, call) in calls.iter().enumerate() {
                let function = call.get("function");
                let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str)
                else {
                    return Err(WireFailure::Malformed(format!(
                        "choices[0].message.tool_calls[{i}] has no function name"
                    )));
                };
                let arguments = match function.and_then(|f| f.get("arguments")) {
                    None | Some(Value::Null) => ToolArguments::Json(json!({})),
                    Some(Value::String(s)) if s.trim().is_empty() => ToolArguments::Json(json!({})),
                    Some(Value::String(s)) => ToolArguments::from_text(s),
                    Some(other) => ToolArguments::Json(other.clone()),
                };
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .unwrap_or_else(|| format!("call_{i}"));
                tool_calls.push(ToolCall {
                    id,
                    name: name.to_string(),
                    arguments,
                });
            }
        }
        Some(_) => {
            return Err(WireFailure::Malformed(
                "choices[0].message.tool_calls is not an array".into(),
            ));
        }
    }
    Ok(ModelResponse {
        text,
        tool_calls,
        usage: usage(obj.get("usage")),
        stop_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(String::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{OutputSchema, ToolSpec};

    #[test]
    fn compile_body_shape() {
        let req = ModelRequest {
            purpose: "compile:forme".into(),
            model: "m".into(),
            system: vec!["SYS".into(), "PRE".into()],
            messages: vec![Message::user("evidence"), Message::user("task")],
            output_schema: Some(OutputSchema {
                name: "forme_output".into(),
                schema: json!({"type": "object"}),
            }),
            ..Default::default()
        };
        let body = request_body(&req);
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "SYS\n\n---\n\nPRE"},
                    {"role": "user", "content": "evidence"},
                    {"role": "user", "content": "task"}
                ],
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": "forme_output", "strict": true, "schema": {"type": "object"}}},
                "stream": false
            })
        );
        let keys: Vec<&String> = body.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["model", "messages", "response_format", "stream"]);
    }

    #[test]
    fn render_body_shape_with_history() {
        let req = ModelRequest {
            purpose: "render:a".into(),
            model: "m".into(),
            system: vec!["S".into(), "C".into(), "W".into()],
            messages: vec![
                Message::user("ptr"),
                Message::Assistant {
                    text: None,
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "wm_read".into(),
                        arguments: ToolArguments::Json(json!({"path": "a", "offset": null})),
                    }],
                },
                Message::tool_result("c1", "{\"error\":\"not found: a\"}", true),
            ],
            tools: vec![ToolSpec {
                name: "wm_read".into(),
                description: "read".into(),
                parameters: json!({"type": "object"}),
            }],
            temperature: Some(0.0),
            reasoning_effort: Some("low".into()),
            ..Default::default()
        };
        let body = request_body(&req);
        assert_eq!(body["messages"][0]["content"], "S\n\n---\n\nC\n\n---\n\nW");
        assert_eq!(
            body["messages"][2],
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {
                    "name": "wm_read", "arguments": "{\"path\":\"a\",\"offset\":null}"}}]})
        );
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "{\"error\":\"not found: a\"}"})
        );
        assert_eq!(body["tool_choice"], "auto");
        assert!(body["tools"][0]["function"].get("strict").is_none());
        assert_eq!(body["temperature"], json!(0.0));
        assert_eq!(body["reasoning_effort"], "low");
        assert_eq!(body["stream"], false);
    }

    #[test]
    fn parses_text_parts_tool_calls_and_usage() {
        let body = json!({
            "id": "x", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}],
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "finish", "arguments": "{\"status\":\"done\"}"}},
                    {"type": "function", "function": {"name": "ws_write", "arguments": "{bad"}},
                    {"id": "", "type": "function", "function": {"name": "wm_list", "arguments": {"k": 1}}}
                ]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 40}}
        });
        let r = parse_response(&body).unwrap();
        assert_eq!(r.text.as_deref(), Some("ab"));
        assert_eq!(
            r.tool_calls[0].arguments,
            ToolArguments::Json(json!({"status": "done"}))
        );
        assert_eq!(r.tool_calls[1].id, "call_1");
        assert_eq!(r.tool_calls[1].arguments, ToolArguments::Raw("{bad".into()));
        assert_eq!(r.tool_calls[2].id, "call_2");
        assert_eq!(
            r.tool_calls[2].arguments,
            ToolArguments::Json(json!({"k": 1}))
        );
        assert_eq!(r.stop_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            r.usage,
            Usage {
                input: 100,
                cached_input: 40,
                cache_write: 0,
                output: 9
            }
        );
        assert_eq!(r.usage.tokens().fresh, 69);
        assert_eq!(r.usage.tokens().reused, 40);
    }

    #[test]
    fn failures_are_classified() {
        assert_eq!(
            parse_response(&json!({"error": {"message": "upstream", "code": 429}})),
            Err(WireFailure::ErrorBody {
                status: 429,
                message: "upstream".into()
            })
        );
        assert_eq!(
            parse_response(&json!({"error": {"message": "x"}, "choices": []})),
            Err(WireFailure::ErrorBody {
                status: 502,
                message: "x".into()
            })
        );
        assert_eq!(
            parse_response(&json!({"choices": [{"message": {"content": null, "refusal": "no"}}]})),
            Err(WireFailure::Refused("no".into()))
        );
        for bad in [
            json!([]),
            json!({}),
            json!({"choices": []}),
            json!({"choices": [{}]}),
            json!({"choices": [{"message": {"content": 5}}]}),
            json!({"choices": [{"message": {"tool_calls": {}}}]}),
            json!({"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}),
        ] {
            assert!(
                matches!(parse_response(&bad), Err(WireFailure::Malformed(_))),
                "{bad}"
            );
        }
        // Missing usage is zero, not an error.
        let r = parse_response(&json!({"choices": [{"message": {"content": "x"}}]})).unwrap();
        assert_eq!(r.usage, Usage::default());
    }
}
