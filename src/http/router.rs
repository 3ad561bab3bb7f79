//! Routing: exact routes, pattern routes with path parameters (`/nodes/{node}`), prefix routes
//! with a captured remainder, per-route methods with one 405 policy, a global method
//! allow-list, optional bearer auth (with per-route exemptions) and a fallback handler.
//!
//! Order of checks in [`Router::dispatch`] (HOST.md §10.5 "Check order", VIEWER.md §6.1):
//! 1. global method allow-list → 405 `{"error":"method <M> not allowed"}` + `allow`;
//! 2. bearer token (when configured) → 401, unless the matched route is public for the method;
//! 3. route lookup: exact path, else the first pattern route whose segments match (HOST.md
//!    §10.1: the path split on `/`, each segment percent-decoded, one trailing `/` ignored; a
//!    bad escape → 400 `{"error":"invalid path encoding"}`; parameters may be restricted with
//!    [`Router::param`]), else the longest matching prefix, else the fallback;
//!    a matched path without the request's method → 405
//!    `{"error":"method <M> not allowed on <path>"}` + the route's `allow`;
//! 4. for `GET` and `HEAD`, the body is read and discarded up to the limit → 413 when larger;
//!    other methods leave the body to the handler ([`Request::read_body`]);
//! 5. the handler.
//!
//! The server adds what depends on the socket: the busy limit (503), the `Host` check (403,
//! before step 1), standard headers and ETag/304.

use std::sync::Arc;

use super::codec::decode_path_segments;
use super::policy::BearerAuth;
use super::request::Request;
use super::response::Response;

/// A request handler. Handlers run on the server's worker threads; a panic is caught and
/// answered 500 `{"error":"internal error"}`.
pub type Handler = Arc<dyn Fn(&mut Request) -> Response + Send + Sync + 'static>;

#[derive(Clone)]
struct Route {
    methods: Vec<(String, Handler)>,
    /// Methods that skip the bearer check on this route.
    public: Vec<String>,
}

/// One segment of a pattern route.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
    Literal(String),
    Param(String),
}

fn parse_pattern(pattern: &str) -> Vec<Seg> {
    let trimmed = pattern.strip_prefix('/').unwrap_or(pattern);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    if trimmed.is_empty() {
        return Vec::new();
    }
    trimmed
        .split('/')
        .map(
            |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => Seg::Param(name.to_owned()),
                None => Seg::Literal(s.to_owned()),
            },
        )
        .collect()
}

/// A predicate on a decoded path-parameter value.
type ParamCheck = Arc<dyn Fn(&str) -> bool + Send + Sync + 'static>;

/// Formats the path shown in pattern routes' 405 messages.
type PathDisplay = Arc<dyn Fn(&Request) -> String + Send + Sync + 'static>;

/// What the lookup found for a request.
enum Found<'r> {
    Route(&'r Route, Option<String>, Vec<(String, String)>),
    Fallback,
    BadEncoding,
}

impl Route {
    fn handler_for(&self, method: &str) -> Option<&Handler> {
        self.methods
            .iter()
            .find(|(m, _)| m == method)
            .map(|(_, h)| h)
    }

    fn allow(&self) -> Vec<&str> {
        self.methods.iter().map(|(m, _)| m.as_str()).collect()
    }
}

/// The routing table and request policies shared by the viewer and the daemon. Build it once,
/// then pass it to [`super::Server::start`].
///
/// ```
/// use reactor::http::{Response, Router};
/// let router = Router::new()
///     .only_methods(&["GET"])
///     .get("/api/state", |_rq| Response::json(200, &serde_json::json!({"ok": true})))
///     .prefix(&["GET"], "/api/node/", |rq| match rq.rest_decoded() {
///         Ok(id) => Response::json(200, &serde_json::json!({"id": id})),
///         Err(_) => Response::error(400, "malformed percent-encoding in node id"),
///     })
///     .fallback(|_rq| Response::not_found_text());
/// let mut rq = reactor::http::Request::synthetic("GET", "/api/node/a%2Fb", &[], Vec::new());
/// assert_eq!(router.dispatch(&mut rq).body_bytes().unwrap(), br#"{"id":"a/b"}"#);
/// ```
#[derive(Clone, Default)]
pub struct Router {
    exact: Vec<(String, Route)>,
    patterns: Vec<(Vec<Seg>, Route)>,
    param_checks: Vec<(String, ParamCheck)>,
    display_path: Option<PathDisplay>,
    segments_only: bool,
    prefixes: Vec<(String, Route)>,
    fallback: Option<Handler>,
    only_methods: Option<Vec<String>>,
    bearer: Option<BearerAuth>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field(
                "exact",
                &self
                    .exact
                    .iter()
                    .map(|(p, r)| (p, r.allow()))
                    .collect::<Vec<_>>(),
            )
            .field(
                "patterns",
                &self
                    .patterns
                    .iter()
                    .map(|(p, r)| (p, r.allow()))
                    .collect::<Vec<_>>(),
            )
            .field(
                "prefixes",
                &self
                    .prefixes
                    .iter()
                    .map(|(p, r)| (p, r.allow()))
                    .collect::<Vec<_>>(),
            )
            .field("only_methods", &self.only_methods)
            .field("bearer", &self.bearer)
            .finish_non_exhaustive()
    }
}

fn add<K: PartialEq + Clone>(
    table: &mut Vec<(K, Route)>,
    methods: &[&str],
    key: &K,
    handler: Handler,
) -> usize {
    let index = match table.iter().position(|(p, _)| p == key) {
        Some(i) => i,
        None => {
            table.push((
                key.clone(),
                Route {
                    methods: Vec::new(),
                    public: Vec::new(),
                },
            ));
            table.len() - 1
        }
    };
    let route = &mut table[index].1;
    for method in methods {
        route.methods.retain(|(m, _)| m != method);
        route
            .methods
            .push(((*method).to_owned(), Arc::clone(&handler)));
    }
    index
}

impl Router {
    /// An empty router: every path goes to the default fallback (404 `{"error":"not found"}`).
    pub fn new() -> Router {
        Router::default()
    }

    /// Adds a route for `methods` (case-sensitive tokens such as `"GET"`). A `path` without
    /// `{…}` matches the raw request path exactly; a path with parameter segments, such as
    /// `/{reactor}/nodes/{node}`, is a pattern route matched on decoded segments (see the
    /// module docs), its values read with [`Request::param`]. Registering the same path again
    /// adds or replaces methods.
    pub fn route<F>(mut self, methods: &[&str], path: &str, handler: F) -> Router
    where
        F: Fn(&mut Request) -> Response + Send + Sync + 'static,
    {
        let segs = parse_pattern(path);
        if self.segments_only || segs.iter().any(|s| matches!(s, Seg::Param(_))) {
            add(&mut self.patterns, methods, &segs, Arc::new(handler));
        } else {
            add(
                &mut self.exact,
                methods,
                &path.to_owned(),
                Arc::new(handler),
            );
        }
        self
    }

    /// Like [`Router::route`], and requests with one of `methods` on this route skip the
    /// bearer check (HOST.md §10.3: `GET /health`).
    pub fn public_route<F>(mut self, methods: &[&str], path: &str, handler: F) -> Router
    where
        F: Fn(&mut Request) -> Response + Send + Sync + 'static,
    {
        self = self.route(methods, path, handler);
        let segs = parse_pattern(path);
        let route = if self.segments_only || segs.iter().any(|s| matches!(s, Seg::Param(_))) {
            self.patterns
                .iter_mut()
                .find(|(p, _)| *p == segs)
                .map(|(_, r)| r)
        } else {
            self.exact
                .iter_mut()
                .find(|(p, _)| p == path)
                .map(|(_, r)| r)
        };
        if let Some(route) = route {
            route.public.extend(methods.iter().map(|m| (*m).to_owned()));
        }
        self
    }

    /// Makes every route added afterwards a pattern route, matched on decoded segments with one
    /// trailing `/` ignored, even without parameters (HOST.md §10.1: `/health/` is `/health`).
    pub fn decoded_segments(mut self) -> Router {
        self.segments_only = true;
        self
    }

    /// Restricts path parameter `name` in every pattern route: a route matches only when
    /// `accept` returns true for the decoded value (e.g. the names of the hosted reactors).
    pub fn param<F>(mut self, name: &str, accept: F) -> Router
    where
        F: Fn(&str) -> bool + Send + Sync + 'static,
    {
        self.param_checks.push((name.to_owned(), Arc::new(accept)));
        self
    }

    /// Replaces the path shown in pattern routes' 405 messages (default: the request path as
    /// sent). HOST.md §10.2 shows the path after a multi-reactor host's `/<reactor>` prefix.
    pub(crate) fn display_path<F>(mut self, display: F) -> Router
    where
        F: Fn(&Request) -> String + Send + Sync + 'static,
    {
        self.display_path = Some(Arc::new(display));
        self
    }

    /// Shorthand for [`Router::route`] with `GET`.
    pub fn get<F>(self, path: &str, handler: F) -> Router
    where
        F: Fn(&mut Request) -> Response + Send + Sync + 'static,
    {
        self.route(&["GET"], path, handler)
    }

    /// Shorthand for [`Router::route`] with `POST`.
    pub fn post<F>(self, path: &str, handler: F) -> Router
    where
        F: Fn(&mut Request) -> Response + Send + Sync + 'static,
    {
        self.route(&["POST"], path, handler)
    }

    /// Adds a prefix route: any path starting with `prefix` (for example `/api/node/`) and
    /// not matched exactly; the text after the prefix is [`Request::rest`]. The longest
    /// matching prefix wins.
    pub fn prefix<F>(mut self, methods: &[&str], prefix: &str, handler: F) -> Router
    where
        F: Fn(&mut Request) -> Response + Send + Sync + 'static,
    {
        add(
            &mut self.prefixes,
            methods,
            &prefix.to_owned(),
            Arc::new(handler),
        );
        self.prefixes
            .sort_by(|(a, _), (b, _)| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self
    }

    /// The handler for paths no route matches (any method that passed the global check).
    pub fn fallback<F>(mut self, handler: F) -> Router
    where
        F: Fn(&mut Request) -> Response + Send + Sync + 'static,
    {
        self.fallback = Some(Arc::new(handler));
        self
    }

    /// Restricts every path to `methods`: any other method → 405 with `allow: <methods>` and
    /// `{"error":"method <M> not allowed"}`, before auth and routing (VIEWER.md §6.1 uses
    /// `["GET"]`; HOST.md §10.5 uses `["GET", "POST"]`).
    pub fn only_methods(mut self, methods: &[&str]) -> Router {
        self.only_methods = Some(methods.iter().map(|m| (*m).to_owned()).collect());
        self
    }

    /// Requires a bearer token (HOST.md §10.3), checked after the global method check.
    pub fn bearer_auth(mut self, auth: BearerAuth) -> Router {
        self.bearer = Some(auth);
        self
    }

    fn lookup(&self, path: &str) -> Found<'_> {
        if let Some((_, route)) = self.exact.iter().find(|(p, _)| p == path) {
            return Found::Route(route, None, Vec::new());
        }
        if !self.patterns.is_empty() {
            let segments = match decode_path_segments(path) {
                Ok(s) => s,
                Err(_) => return Found::BadEncoding,
            };
            for (pattern, route) in &self.patterns {
                if let Some(params) = self.match_pattern(pattern, &segments) {
                    return Found::Route(route, None, params);
                }
            }
        }
        match self
            .prefixes
            .iter()
            .find(|(p, _)| path.starts_with(p.as_str()))
        {
            Some((p, route)) => Found::Route(route, Some(path[p.len()..].to_owned()), Vec::new()),
            None => Found::Fallback,
        }
    }

    fn match_pattern(&self, pattern: &[Seg], segments: &[String]) -> Option<Vec<(String, String)>> {
        if pattern.len() != segments.len() {
            return None;
        }
        let mut params = Vec::new();
        for (seg, value) in pattern.iter().zip(segments) {
            match seg {
                Seg::Literal(l) if l == value => {}
                Seg::Literal(_) => return None,
                Seg::Param(name) => {
                    let accepted = self
                        .param_checks
                        .iter()
                        .filter(|(n, _)| n == name)
                        .all(|(_, check)| check(value));
                    if !accepted {
                        return None;
                    }
                    params.push((name.clone(), value.clone()));
                }
            }
        }
        Some(params)
    }

    /// Runs the checks and the handler for `request` (see the module documentation for the
    /// order). Usable without a server, on [`Request::synthetic`] requests.
    pub fn dispatch(&self, request: &mut Request) -> Response {
        if let Some(only) = &self.only_methods
            && !only.iter().any(|m| m == request.method())
        {
            let allow: Vec<&str> = only.iter().map(String::as_str).collect();
            return Response::method_not_allowed(request.method(), &allow, None);
        }
        let path = request.path().to_owned();
        let found = self.lookup(&path);
        if let Some(auth) = &self.bearer {
            let public = matches!(&found, Found::Route(route, _, _)
                if route.public.iter().any(|m| m == request.method()));
            if !public && let Some(denied) = auth.check(request) {
                return denied;
            }
        }
        let handler = match found {
            Found::BadEncoding => return Response::error(400, "invalid path encoding"),
            Found::Route(route, rest, params) => {
                let pattern = self.segments_only || !params.is_empty();
                request.set_rest(rest);
                request.set_params(params);
                match route.handler_for(request.method()) {
                    Some(h) => Arc::clone(h),
                    None => {
                        let shown = match &self.display_path {
                            Some(display) if pattern => display(request),
                            _ => path,
                        };
                        return Response::method_not_allowed(
                            request.method(),
                            &route.allow(),
                            Some(&shown),
                        );
                    }
                }
            }
            Found::Fallback => match &self.fallback {
                Some(h) => Arc::clone(h),
                None => return Response::error(404, "not found"),
            },
        };
        if matches!(request.method(), "GET" | "HEAD")
            && let Err(e) = request.discard_body()
        {
            return e.to_response();
        }
        handler(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(r: &Response) -> String {
        String::from_utf8(r.body_bytes().unwrap().to_vec()).unwrap()
    }

    fn sample() -> Router {
        Router::new()
            .get("/a", |_| Response::text(200, "a"))
            .post("/a", |rq| {
                let n = rq.read_body().map(|b| b.len()).unwrap_or(0);
                Response::text(200, &format!("posted {n}"))
            })
            .prefix(&["GET"], "/p/", |rq| {
                Response::text(200, &format!("p:{}", rq.rest().unwrap_or("?")))
            })
            .prefix(&["GET"], "/p/deep/", |rq| {
                Response::text(200, &format!("deep:{}", rq.rest().unwrap_or("?")))
            })
    }

    #[test]
    fn exact_prefix_and_default_fallback() {
        let r = sample();
        let mut rq = Request::synthetic("GET", "/a?x=1", &[], Vec::new());
        assert_eq!(body(&r.dispatch(&mut rq)), "a");
        let mut rq = Request::synthetic("POST", "/a", &[], b"12345".to_vec());
        assert_eq!(body(&r.dispatch(&mut rq)), "posted 5");
        let mut rq = Request::synthetic("GET", "/p/x%2Fy/z", &[], Vec::new());
        assert_eq!(body(&r.dispatch(&mut rq)), "p:x%2Fy/z");
        let mut rq = Request::synthetic("GET", "/p/deep/q", &[], Vec::new());
        assert_eq!(body(&r.dispatch(&mut rq)), "deep:q");
        let mut rq = Request::synthetic("GET", "/p/", &[], Vec::new());
        assert_eq!(body(&r.dispatch(&mut rq)), "p:");
        let mut rq = Request::synthetic("GET", "/p", &[], Vec::new());
        let resp = r.dispatch(&mut rq);
        assert_eq!(resp.status(), 404);
        assert_eq!(body(&resp), r#"{"error":"not found"}"#);
        let mut rq = Request::synthetic("GET", "/A", &[], Vec::new());
        assert_eq!(r.dispatch(&mut rq).status(), 404);
    }

    #[test]
    fn per_route_405_lists_route_methods() {
        let r = sample();
        let mut rq = Request::synthetic("DELETE", "/a", &[], Vec::new());
        let resp = r.dispatch(&mut rq);
        assert_eq!(resp.status(), 405);
        assert_eq!(resp.header("allow"), Some("GET, POST"));
        assert_eq!(
            body(&resp),
            r#"{"error":"method DELETE not allowed on /a"}"#
        );
        let mut rq = Request::synthetic("HEAD", "/p/x", &[], Vec::new());
        let resp = r.dispatch(&mut rq);
        assert_eq!(resp.status(), 405);
        assert_eq!(resp.header("allow"), Some("GET"));
    }

    #[test]
    fn global_methods_checked_before_auth_and_routes() {
        let r = sample()
            .only_methods(&["GET"])
            .bearer_auth(BearerAuth::new("tok-0123456789abcdef"));
        let mut rq = Request::synthetic("POST", "/a", &[], Vec::new());
        let resp = r.dispatch(&mut rq);
        assert_eq!(resp.status(), 405);
        assert_eq!(resp.header("allow"), Some("GET"));
        assert_eq!(body(&resp), r#"{"error":"method POST not allowed"}"#);
        let mut rq = Request::synthetic("GET", "/a", &[], Vec::new());
        assert_eq!(r.dispatch(&mut rq).status(), 401);
        let mut rq = Request::synthetic(
            "GET",
            "/a",
            &[("Authorization", "Bearer tok-0123456789abcdef")],
            Vec::new(),
        );
        assert_eq!(r.dispatch(&mut rq).status(), 200);
    }

    #[test]
    fn get_bodies_are_discarded_or_413() {
        let r = sample();
        let mut rq = Request::synthetic("GET", "/a", &[], vec![b'x'; 11]).with_body_limit(10);
        let resp = r.dispatch(&mut rq);
        assert_eq!(resp.status(), 413);
        assert_eq!(
            body(&resp),
            r#"{"error":"request body too large (limit 10 bytes)"}"#
        );
        let mut rq = Request::synthetic("GET", "/a", &[], vec![b'x'; 10]).with_body_limit(10);
        assert_eq!(r.dispatch(&mut rq).status(), 200);
    }

    #[test]
    fn pattern_routes_decode_restrict_and_share_the_405_policy() {
        let r = Router::new()
            .only_methods(&["GET", "POST"])
            .param("tenant", |v| v == "alpha" || v == "b/c")
            .display_path(|rq| format!("shown:{}", rq.path()))
            .get("/{tenant}/nodes/{node}", |rq| {
                Response::text(
                    200,
                    &format!(
                        "{}|{}",
                        rq.param("tenant").unwrap(),
                        rq.param("node").unwrap()
                    ),
                )
            })
            .post("/{tenant}/trigger/{node}", |_| Response::text(200, "t"))
            .fallback(|_| Response::text(404, "nf"));
        let run = |m: &str, p: &str| {
            let mut rq = Request::synthetic(m, p, &[], Vec::new());
            let resp = r.dispatch(&mut rq);
            (resp.status(), body(&resp))
        };
        assert_eq!(run("GET", "/alpha/nodes/a%2Fb"), (200, "alpha|a/b".into()));
        assert_eq!(
            run("GET", "/alpha/nodes/x/"),
            (200, "alpha|x".into()),
            "trailing /"
        );
        assert_eq!(run("GET", "/b%2Fc/nodes/x"), (200, "b/c|x".into()));
        assert_eq!(
            run("GET", "/gamma/nodes/x"),
            (404, "nf".into()),
            "restricted"
        );
        assert_eq!(run("GET", "/alpha/nodes"), (404, "nf".into()));
        assert_eq!(run("GET", "/alpha/nodes/x/y"), (404, "nf".into()));
        assert_eq!(
            run("GET", "/alpha/nodes/%zz"),
            (400, r#"{"error":"invalid path encoding"}"#.into())
        );
        assert_eq!(
            run("GET", "/alpha/trigger/x"),
            (
                405,
                r#"{"error":"method GET not allowed on shown:/alpha/trigger/x"}"#.into()
            )
        );
        assert_eq!(run("POST", "/alpha/trigger/x"), (200, "t".into()));
        let mut rq = Request::synthetic("GET", "/alpha/trigger/x", &[], Vec::new());
        assert_eq!(r.dispatch(&mut rq).header("allow"), Some("POST"));
    }

    #[test]
    fn public_routes_skip_the_bearer_check_for_their_methods_only() {
        let r = Router::new()
            .decoded_segments()
            .bearer_auth(BearerAuth::new("tok-0123456789abcdef"))
            .public_route(&["GET"], "/health", |_| Response::text(200, "ok"))
            .post("/health", |_| Response::text(200, "posted"))
            .get("/status", |_| Response::text(200, "s"));
        let status = |m: &str, p: &str| {
            let mut rq = Request::synthetic(m, p, &[], Vec::new());
            r.dispatch(&mut rq).status()
        };
        assert_eq!(status("GET", "/health"), 200);
        assert_eq!(status("GET", "/health/"), 200);
        assert_eq!(status("POST", "/health"), 401);
        assert_eq!(status("GET", "/status"), 401);
        assert_eq!(
            status("GET", "/nowhere"),
            401,
            "unmatched paths need the token"
        );
    }

    #[test]
    fn fallback_receives_unmatched_paths() {
        let r = sample().fallback(|rq| Response::text(404, &format!("nf {}", rq.path())));
        let mut rq = Request::synthetic("GET", "/zzz?q", &[], Vec::new());
        assert_eq!(body(&r.dispatch(&mut rq)), "nf /zzz");
    }
}
