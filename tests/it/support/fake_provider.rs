//! The loopback fake model provider (HOST.md §11.2).
//!
//! A tiny_http server on `127.0.0.1:0` that speaks Chat Completions (`POST …/chat/completions`)
//! and Anthropic Messages (`POST …/messages`). It replays a queue of scripted [`Entry`]s: a
//! request takes the first unconsumed entry whose [`When`] guard matches (purpose header, model,
//! body substring, path suffix). Entries answer with a body (JSON or not, any status and
//! headers), optionally after a delay, or cut the exchange ([`Reply::Drop`]). Every request is
//! recorded (method, path, headers, raw and parsed body). An unmatched request is answered 500
//! with an explanatory body and recorded; [`FakeProvider::finish`] (or drop) panics when any
//! request was unmatched or any entry was left unconsumed.
//!
//! Reply bodies may contain the placeholders `{{key}}` (the key the request carried, from
//! `Authorization: Bearer` or `x-api-key`) and `{{model}}` (the request's `model`), substituted
//! JSON-escaped at answer time. The error builders echo the key on purpose, to prove that the
//! clients redact it.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// Which protocol a builder shapes its body for (and which endpoint the entry matches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Chat Completions (`…/chat/completions`).
    Chat,
    /// Anthropic Messages (`…/messages`).
    Messages,
}

impl Protocol {
    fn path_suffix(self) -> &'static str {
        match self {
            Protocol::Chat => "/chat/completions",
            Protocol::Messages => "/messages",
        }
    }
}

/// A guard over a request; every set field must match.
#[derive(Debug, Clone, Default)]
pub struct When {
    /// Exact value of `X-Reactor-Purpose`.
    pub purpose: Option<String>,
    /// Exact `model` of the JSON body.
    pub model: Option<String>,
    /// A substring of the raw body.
    pub body_contains: Option<String>,
    /// The request path ends with this.
    pub path_suffix: Option<String>,
}

impl When {
    fn matches(&self, req: &RecordedRequest) -> bool {
        if let Some(p) = &self.purpose
            && req.header("x-reactor-purpose") != Some(p.as_str())
        {
            return false;
        }
        if let Some(m) = &self.model
            && req
                .body
                .as_ref()
                .and_then(|b| b.get("model"))
                .and_then(Value::as_str)
                != Some(m.as_str())
        {
            return false;
        }
        if let Some(s) = &self.body_contains
            && !req.raw_body.contains(s.as_str())
        {
            return false;
        }
        if let Some(s) = &self.path_suffix
            && !req.path.ends_with(s.as_str())
        {
            return false;
        }
        true
    }
}

/// What an entry answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A response with this status, headers and body (placeholders substituted).
    Body {
        /// HTTP status.
        status: u16,
        /// Extra headers (`Content-Type: application/json` is added for JSON bodies).
        headers: Vec<(String, String)>,
        /// The body text.
        body: String,
    },
    /// The exchange is cut: the fake writes bytes that are not an HTTP response and releases
    /// the connection, so the client sees a broken connection (tiny_http offers no way to
    /// reset the socket itself).
    Drop,
}

/// One scripted entry.
#[derive(Debug, Clone)]
pub struct Entry {
    /// A label for failure messages.
    pub label: String,
    /// The guard.
    pub when: When,
    /// A delay before answering.
    pub delay: Option<Duration>,
    /// The answer.
    pub reply: Reply,
}

/// Usage figures for a scripted answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FakeUsage {
    /// Chat `prompt_tokens` / Messages `input_tokens`.
    pub input: u64,
    /// Chat `completion_tokens` / Messages `output_tokens`.
    pub output: u64,
    /// Chat `prompt_tokens_details.cached_tokens` / Messages `cache_read_input_tokens`.
    pub cached: u64,
    /// Messages `cache_creation_input_tokens` (ignored on Chat).
    pub cache_write: u64,
}

impl Entry {
    /// An entry with a JSON body.
    pub fn json(label: &str, status: u16, body: Value) -> Entry {
        Entry {
            label: label.to_string(),
            when: When::default(),
            delay: None,
            reply: Reply::Body {
                status,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: body.to_string(),
            },
        }
    }

    /// An entry with a raw body (any bytes of text, any status).
    pub fn raw(label: &str, status: u16, body: &str) -> Entry {
        Entry {
            label: label.to_string(),
            when: When::default(),
            delay: None,
            reply: Reply::Body {
                status,
                headers: Vec::new(),
                body: body.to_string(),
            },
        }
    }

    /// Matches only requests with this `X-Reactor-Purpose`.
    pub fn when_purpose(mut self, purpose: &str) -> Entry {
        self.when.purpose = Some(purpose.to_string());
        self
    }

    /// Matches only requests for this model.
    pub fn when_model(mut self, model: &str) -> Entry {
        self.when.model = Some(model.to_string());
        self
    }

    /// Matches only requests whose raw body contains `needle`.
    pub fn when_body_contains(mut self, needle: &str) -> Entry {
        self.when.body_contains = Some(needle.to_string());
        self
    }

    /// Matches only requests whose path ends with `suffix`.
    pub fn when_path_suffix(mut self, suffix: &str) -> Entry {
        self.when.path_suffix = Some(suffix.to_string());
        self
    }

    /// Answers after `delay` (to exercise timeouts).
    pub fn delayed(mut self, delay: Duration) -> Entry {
        self.delay = Some(delay);
        self
    }

    /// Adds a response header (for example `Retry-After`).
    pub fn with_header(mut self, name: &str, value: &str) -> Entry {
        if let Reply::Body { headers, .. } = &mut self.reply {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }

    fn edit_json(mut self, f: impl FnOnce(&mut Value)) -> Entry {
        if let Reply::Body { body, .. } = &mut self.reply
            && let Ok(mut v) = serde_json::from_str::<Value>(body)
        {
            f(&mut v);
            *body = v.to_string();
        }
        self
    }

    /// Replaces the usage figures of a Chat or Messages answer.
    pub fn with_usage(self, usage: FakeUsage) -> Entry {
        self.edit_json(|v| {
            if v.get("choices").is_some() {
                v["usage"] = chat_usage(usage);
            } else if v.get("content").is_some() {
                v["usage"] = messages_usage(usage);
            }
        })
    }

    /// Removes the usage member of an answer.
    pub fn without_usage(self) -> Entry {
        self.edit_json(|v| {
            if let Some(o) = v.as_object_mut() {
                o.remove("usage");
            }
        })
    }

    /// Replaces `finish_reason` (Chat) or `stop_reason` (Messages).
    pub fn with_stop_reason(self, reason: &str) -> Entry {
        self.edit_json(|v| {
            if v.get("choices").is_some() {
                v["choices"][0]["finish_reason"] = json!(reason);
            } else {
                v["stop_reason"] = json!(reason);
            }
        })
    }
}

fn chat_usage(u: FakeUsage) -> Value {
    json!({
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.input + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cached}
    })
}

fn messages_usage(u: FakeUsage) -> Value {
    json!({
        "input_tokens": u.input,
        "output_tokens": u.output,
        "cache_creation_input_tokens": u.cache_write,
        "cache_read_input_tokens": u.cached
    })
}

const DEFAULT_USAGE: FakeUsage = FakeUsage {
    input: 12,
    output: 3,
    cached: 0,
    cache_write: 0,
};

fn chat_body(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "{{model}}",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": chat_usage(DEFAULT_USAGE)
    })
}

fn messages_body(content: Value, stop_reason: &str) -> Value {
    json!({
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "{{model}}",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": messages_usage(DEFAULT_USAGE)
    })
}

/// A Chat Completions answer whose `content` is `answer` as JSON text (compile sessions).
pub fn chat_json(answer: &Value) -> Entry {
    chat_text(&answer.to_string())
}

/// A Chat Completions answer with text content.
pub fn chat_text(text: &str) -> Entry {
    Entry::json(
        "chat text",
        200,
        chat_body(json!({"role": "assistant", "content": text}), "stop"),
    )
    .when_path_suffix(Protocol::Chat.path_suffix())
}

/// A Chat Completions answer whose content is an array of text parts.
pub fn chat_content_parts(parts: &[&str]) -> Entry {
    let parts: Vec<Value> = parts
        .iter()
        .map(|p| json!({"type": "text", "text": p}))
        .collect();
    Entry::json(
        "chat parts",
        200,
        chat_body(json!({"role": "assistant", "content": parts}), "stop"),
    )
    .when_path_suffix(Protocol::Chat.path_suffix())
}

/// A Chat Completions answer with tool calls (name, arguments object), ids `call_fake_<i>`.
pub fn chat_tool_calls(calls: &[(&str, Value)]) -> Entry {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            json!({"id": format!("call_fake_{i}"), "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    Entry::json(
        "chat tool calls",
        200,
        chat_body(
            json!({"role": "assistant", "content": null, "tool_calls": calls}),
            "tool_calls",
        ),
    )
    .when_path_suffix(Protocol::Chat.path_suffix())
}

/// A Chat Completions refusal.
pub fn chat_refusal(text: &str) -> Entry {
    Entry::json(
        "chat refusal",
        200,
        chat_body(
            json!({"role": "assistant", "content": null, "refusal": text}),
            "stop",
        ),
    )
    .when_path_suffix(Protocol::Chat.path_suffix())
}

/// A Messages answer using the forced `submit_<schema_name>` tool with `input`.
pub fn messages_submit(schema_name: &str, input: Value) -> Entry {
    Entry::json(
        "messages submit",
        200,
        messages_body(
            json!([{"type": "tool_use", "id": "toolu_fake_0",
                    "name": format!("submit_{schema_name}"), "input": input}]),
            "tool_use",
        ),
    )
    .when_path_suffix(Protocol::Messages.path_suffix())
}

/// A Messages answer with tool calls (name, input), ids `toolu_fake_<i>`.
pub fn messages_tool_calls(calls: &[(&str, Value)]) -> Entry {
    let blocks: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, input))| {
            json!({"type": "tool_use", "id": format!("toolu_fake_{i}"), "name": name, "input": input})
        })
        .collect();
    Entry::json(
        "messages tool calls",
        200,
        messages_body(Value::Array(blocks), "tool_use"),
    )
    .when_path_suffix(Protocol::Messages.path_suffix())
}

/// A Messages answer calling `finish` with `args`.
pub fn messages_finish(args: Value) -> Entry {
    messages_tool_calls(&[("finish", args)])
}

/// A Messages answer with one text block.
pub fn messages_text(text: &str) -> Entry {
    Entry::json(
        "messages text",
        200,
        messages_body(json!([{"type": "text", "text": text}]), "end_turn"),
    )
    .when_path_suffix(Protocol::Messages.path_suffix())
}

/// An error response shaped for `protocol` (Chat: `{"error": {"message", "code"}}`; Messages:
/// `{"type": "error", "error": {"type", "message"}}`).
pub fn error(protocol: Protocol, status: u16, message: &str) -> Entry {
    let body = match protocol {
        Protocol::Chat => json!({"error": {"message": message, "code": status}}),
        Protocol::Messages => {
            let kind = match status {
                400 => "invalid_request_error",
                401 => "authentication_error",
                402 => "billing_error",
                403 => "permission_error",
                404 => "not_found_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
    };
    Entry::json(&format!("error {status}"), status, body).when_path_suffix(protocol.path_suffix())
}

/// 401 whose message echoes the key received.
pub fn error_401(protocol: Protocol) -> Entry {
    error(protocol, 401, "Invalid API key provided: {{key}}")
}

/// 402 whose message echoes the key received.
pub fn error_402(protocol: Protocol) -> Entry {
    error(
        protocol,
        402,
        "Insufficient credits for key {{key}}. Add more using https://example.invalid/credits",
    )
}

/// 429 (with `Retry-After` when given) whose message echoes the key received.
pub fn error_429(protocol: Protocol, retry_after: Option<&str>) -> Entry {
    let e = error(protocol, 429, "Rate limit exceeded for key {{key}}");
    match retry_after {
        Some(v) => e.with_header("Retry-After", v),
        None => e,
    }
}

/// 400 rejecting `temperature`, echoing the key received.
pub fn error_400_temperature(protocol: Protocol) -> Entry {
    error(
        protocol,
        400,
        "Unsupported parameter: 'temperature' is not supported with this model (key {{key}})",
    )
}

/// 404 naming the model.
pub fn error_404(protocol: Protocol) -> Entry {
    error(
        protocol,
        404,
        "No endpoints found for {{model}} (key {{key}})",
    )
}

/// 500 echoing the key received.
pub fn error_500(protocol: Protocol) -> Entry {
    error(
        protocol,
        500,
        "Internal server error while serving key {{key}}",
    )
}

/// A 200 whose body carries an error object and no answer (gateways reporting upstream
/// failures); `code` goes into the body when given.
pub fn error_in_200(protocol: Protocol, code: Option<u16>, message: &str) -> Entry {
    let body = match (protocol, code) {
        (Protocol::Chat, Some(c)) => json!({"error": {"message": message, "code": c}}),
        (Protocol::Chat, None) => json!({"error": {"message": message}}),
        (Protocol::Messages, _) => {
            json!({"type": "error", "error": {"type": "api_error", "message": message}})
        }
    };
    Entry::json("error in 200", 200, body).when_path_suffix(protocol.path_suffix())
}

/// A 200 with a body that is not a protocol response.
pub fn malformed(protocol: Protocol, body: &str) -> Entry {
    Entry::raw("malformed", 200, body).when_path_suffix(protocol.path_suffix())
}

/// A cut exchange (see [`Reply::Drop`]).
pub fn dropped(protocol: Protocol) -> Entry {
    Entry {
        label: "dropped".into(),
        when: When {
            path_suffix: Some(protocol.path_suffix().to_string()),
            ..When::default()
        },
        delay: None,
        reply: Reply::Drop,
    }
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `POST`, `GET`, …
    pub method: String,
    /// The path with query.
    pub path: String,
    /// Headers with lower-case names, in order.
    pub headers: Vec<(String, String)>,
    /// The body text (lossy UTF-8).
    pub raw_body: String,
    /// The parsed body, when JSON.
    pub body: Option<Value>,
    /// The label of the entry it matched; `None` when unmatched.
    pub matched: Option<String>,
}

impl RecordedRequest {
    /// A header value by case-insensitive name (the first one).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// How many times a header occurs.
    pub fn header_count(&self, name: &str) -> usize {
        let name = name.to_ascii_lowercase();
        self.headers.iter().filter(|(n, _)| *n == name).count()
    }

    /// The key carried by `Authorization: Bearer …` or `x-api-key`.
    pub fn received_key(&self) -> Option<String> {
        if let Some(v) = self.header("authorization") {
            return Some(v.strip_prefix("Bearer ").unwrap_or(v).to_string());
        }
        self.header("x-api-key").map(String::from)
    }

    /// The parsed body (panics with the raw text when it is not JSON).
    pub fn json(&self) -> &Value {
        self.body
            .as_ref()
            .unwrap_or_else(|| panic!("request body is not JSON: {}", self.raw_body))
    }
}

struct Slot {
    entry: Entry,
    consumed: bool,
}

#[derive(Default)]
struct State {
    slots: Vec<Slot>,
    requests: Vec<RecordedRequest>,
}

/// The running fake provider. Stops on drop.
pub struct FakeProvider {
    addr: String,
    state: Arc<Mutex<State>>,
    server: Arc<tiny_http::Server>,
    accept: Option<JoinHandle<()>>,
    finished: bool,
}

/// Largest request body the fake reads (64 MiB).
const MAX_BODY: u64 = 64 * 1024 * 1024;

fn json_escape_inner(s: &str) -> String {
    let quoted = Value::String(s.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

impl FakeProvider {
    /// Starts the fake on `127.0.0.1:0`.
    pub fn start() -> FakeProvider {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind 127.0.0.1:0"));
        let addr = server
            .server_addr()
            .to_ip()
            .expect("an IP listener")
            .to_string();
        let state = Arc::new(Mutex::new(State::default()));
        let accept = {
            let server = Arc::clone(&server);
            let state = Arc::clone(&state);
            std::thread::spawn(move || {
                for request in server.incoming_requests() {
                    let state = Arc::clone(&state);
                    std::thread::spawn(move || handle(request, &state));
                }
            })
        };
        FakeProvider {
            addr,
            state,
            server,
            accept: Some(accept),
            finished: false,
        }
    }

    /// Starts the fake with a script.
    pub fn with_entries(entries: impl IntoIterator<Item = Entry>) -> FakeProvider {
        let fake = FakeProvider::start();
        for e in entries {
            fake.push(e);
        }
        fake
    }

    /// The base URL to configure: `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends a scripted entry.
    pub fn push(&self, entry: Entry) {
        self.lock().slots.push(Slot {
            entry,
            consumed: false,
        });
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// The number of requests received so far.
    pub fn request_count(&self) -> usize {
        self.lock().requests.len()
    }

    /// Labels of the entries not yet consumed.
    pub fn unconsumed(&self) -> Vec<String> {
        self.lock()
            .slots
            .iter()
            .filter(|s| !s.consumed)
            .map(|s| s.entry.label.clone())
            .collect()
    }

    /// `Err` describing unmatched requests and unconsumed entries, if any.
    pub fn verify(&self) -> Result<(), String> {
        let state = self.lock();
        let mut problems = Vec::new();
        for r in state.requests.iter().filter(|r| r.matched.is_none()) {
            problems.push(format!(
                "unmatched request {} {} (purpose {:?})",
                r.method,
                r.path,
                r.header("x-reactor-purpose")
            ));
        }
        for s in state.slots.iter().filter(|s| !s.consumed) {
            problems.push(format!(
                "unconsumed entry '{}' ({:?})",
                s.entry.label, s.entry.when
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// Stops the fake and panics when any request was unmatched or any entry unconsumed.
    pub fn finish(mut self) {
        self.finished = true;
        self.stop();
        if let Err(problems) = self.verify() {
            panic!("fake provider: {problems}");
        }
    }

    fn stop(&mut self) {
        self.server.unblock();
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.stop();
        if !self.finished
            && !std::thread::panicking()
            && let Err(problems) = self.verify()
        {
            panic!("fake provider: {problems}");
        }
    }
}

fn handle(mut request: tiny_http::Request, state: &Mutex<State>) {
    let mut bytes = Vec::new();
    let _ = request.as_reader().take(MAX_BODY).read_to_end(&mut bytes);
    let raw_body = String::from_utf8_lossy(&bytes).into_owned();
    let mut recorded = RecordedRequest {
        method: request.method().as_str().to_string(),
        path: request.url().to_string(),
        headers: request
            .headers()
            .iter()
            .map(|h| {
                (
                    h.field.as_str().as_str().to_ascii_lowercase(),
                    h.value.as_str().to_string(),
                )
            })
            .collect(),
        body: serde_json::from_str(&raw_body).ok(),
        raw_body,
        matched: None,
    };
    let entry = {
        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
        let found = st
            .slots
            .iter_mut()
            .find(|s| !s.consumed && s.entry.when.matches(&recorded));
        let entry = found.map(|s| {
            s.consumed = true;
            s.entry.clone()
        });
        recorded.matched = entry.as_ref().map(|e| e.label.clone());
        st.requests.push(recorded.clone());
        entry
    };
    let Some(entry) = entry else {
        let body = json!({"error": {"message": format!(
            "fake provider: no scripted entry matches {} {} (purpose {:?})",
            recorded.method, recorded.path, recorded.header("x-reactor-purpose")
        ), "code": 500}});
        let _ = request
            .respond(tiny_http::Response::from_string(body.to_string()).with_status_code(500));
        return;
    };
    if let Some(d) = entry.delay {
        std::thread::sleep(d);
    }
    match entry.reply {
        Reply::Drop => {
            let mut w = request.into_writer();
            let _ = w.write_all(b"\x00\x01 not http\r\n\r\n");
            let _ = w.flush();
        }
        Reply::Body {
            status,
            headers,
            body,
        } => {
            let key = recorded.received_key().unwrap_or_default();
            let model = recorded
                .body
                .as_ref()
                .and_then(|b| b.get("model"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let body = body
                .replace("{{key}}", &json_escape_inner(&key))
                .replace("{{model}}", &json_escape_inner(&model));
            let mut response = tiny_http::Response::from_string(body).with_status_code(status);
            for (n, v) in headers {
                if let Ok(h) = tiny_http::Header::from_bytes(n.as_bytes(), v.as_bytes()) {
                    response = response.with_header(h);
                }
            }
            let _ = request.respond(response);
        }
    }
}
