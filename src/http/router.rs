//! Routing: exact routes, prefix routes with a captured remainder, per-route methods with an
//! automatic 405, a global method allow-list, optional bearer auth and a fallback handler.
//!
//! Order of checks in [`Router::dispatch`] (HOST.md §10.5 "Check order", VIEWER.md §6.1):
//! 1. global method allow-list → 405 `{"error":"method <M> not allowed"}` + `allow`;
//! 2. bearer token (when configured) → 401;
//! 3. route lookup: exact path, else the longest matching prefix, else the fallback;
//!    a matched path without the request's method → 405
//!    `{"error":"method <M> not allowed on <path>"}` + the route's `allow`;
//! 4. for `GET` and `HEAD`, the body is read and discarded up to the limit → 413 when larger;
//!    other methods leave the body to the handler ([`Request::read_body`]);
//! 5. the handler.
//!
//! The server adds what depends on the socket: the busy limit (503), the `Host` check (403,
//! before step 1), standard headers and ETag/304.

use std::sync::Arc;

use super::policy::BearerAuth;
use super::request::Request;
use super::response::Response;

/// A request handler. Handlers run on the server's worker threads; a panic is caught and
/// answered 500 `{"error":"internal error"}`.
pub type Handler = Arc<dyn Fn(&mut Request) -> Response + Send + Sync + 'static>;

#[derive(Clone)]
struct Route {
    methods: Vec<(String, Handler)>,
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

fn add(table: &mut Vec<(String, Route)>, methods: &[&str], path: &str, handler: Handler) {
    let index = match table.iter().position(|(p, _)| p == path) {
        Some(i) => i,
        None => {
            table.push((
                path.to_owned(),
                Route {
                    methods: Vec::new(),
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
}

impl Router {
    /// An empty router: every path goes to the default fallback (404 `{"error":"not found"}`).
    pub fn new() -> Router {
        Router::default()
    }

    /// Adds an exact-path route for `methods` (case-sensitive tokens such as `"GET"`).
    /// Registering the same path again adds or replaces methods.
    pub fn route<F>(mut self, methods: &[&str], path: &str, handler: F) -> Router
    where
        F: Fn(&mut Request) -> Response + Send + Sync + 'static,
    {
        add(&mut self.exact, methods, path, Arc::new(handler));
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
        add(&mut self.prefixes, methods, prefix, Arc::new(handler));
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

    /// Runs the checks and the handler for `request` (see the module documentation for the
    /// order). Usable without a server, on [`Request::synthetic`] requests.
    pub fn dispatch(&self, request: &mut Request) -> Response {
        if let Some(only) = &self.only_methods
            && !only.iter().any(|m| m == request.method())
        {
            let allow: Vec<&str> = only.iter().map(String::as_str).collect();
            return Response::method_not_allowed(request.method(), &allow, None);
        }
        if let Some(auth) = &self.bearer
            && let Some(denied) = auth.check(request)
        {
            return denied;
        }
        let path = request.path().to_owned();
        let (route, rest) = match self.exact.iter().find(|(p, _)| *p == path) {
            Some((_, route)) => (Some(route), None),
            None => match self
                .prefixes
                .iter()
                .find(|(p, _)| path.starts_with(p.as_str()))
            {
                Some((p, route)) => (Some(route), Some(path[p.len()..].to_owned())),
                None => (None, None),
            },
        };
        let handler = match route {
            Some(route) => match route.handler_for(request.method()) {
                Some(h) => Arc::clone(h),
                None => {
                    return Response::method_not_allowed(
                        request.method(),
                        &route.allow(),
                        Some(&path),
                    );
                }
            },
            None => match &self.fallback {
                Some(h) => Arc::clone(h),
                None => return Response::error(404, "not found"),
            },
        };
        request.set_rest(rest);
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
    fn fallback_receives_unmatched_paths() {
        let r = sample().fallback(|rq| Response::text(404, &format!("nf {}", rq.path())));
        let mut rq = Request::synthetic("GET", "/zzz?q", &[], Vec::new());
        assert_eq!(body(&r.dispatch(&mut rq)), "nf /zzz");
    }
}
