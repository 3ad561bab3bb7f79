//! Request guards: the loopback `Host` check against DNS rebinding (VIEWER.md §6.1) and the
//! optional bearer token (HOST.md §10.3).

use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use super::request::Request;
use super::response::Response;

fn strip_brackets(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// Whether `host` (a `--host` value: a name or an address, IPv6 optionally bracketed) is a
/// loopback host: `localhost`, `127.0.0.0/8` or `::1` (HOST.md §9.6).
pub fn is_loopback_host(host: &str) -> bool {
    let bare = strip_brackets(host);
    if bare.eq_ignore_ascii_case("localhost") {
        return true;
    }
    bare.parse::<IpAddr>()
        .map(|ip| ip.to_canonical().is_loopback())
        .unwrap_or(false)
}

/// Splits a `Host` header value into the host part (brackets removed for IPv6 literals) and
/// checks the optional port is all digits. `None` for a malformed value.
fn host_part(value: &str) -> Option<&str> {
    let value = value.trim();
    if let Some(after_bracket) = value.strip_prefix('[') {
        let (inside, tail) = after_bracket.split_once(']')?;
        inside.parse::<Ipv6Addr>().ok()?;
        let port_ok = tail.is_empty()
            || tail
                .strip_prefix(':')
                .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
        return port_ok.then_some(inside);
    }
    let (name, port) = match value.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (value, None),
    };
    if name.is_empty() || name.contains(':') {
        return None;
    }
    if let Some(port) = port
        && !port.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some(name)
}

/// The allow-list of the `Host` check (VIEWER.md §6.1): `localhost`, any loopback address
/// literal (`127.x.y.z`, `[::1]`, also IPv4-mapped `[::ffff:127.0.0.1]`) and the configured
/// `--host` string, each with any port, compared case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostAllowList {
    configured: String,
}

impl HostAllowList {
    /// The allow-list for a server started with `--host <configured>`.
    pub fn new(configured: &str) -> HostAllowList {
        HostAllowList {
            configured: strip_brackets(configured.trim()).to_owned(),
        }
    }

    /// Whether a `Host` header value is allowed. Malformed values are not.
    pub fn allows(&self, header_value: &str) -> bool {
        let Some(name) = host_part(header_value) else {
            return false;
        };
        if name.eq_ignore_ascii_case("localhost") || name.eq_ignore_ascii_case(&self.configured) {
            return true;
        }
        name.parse::<IpAddr>()
            .map(|ip| ip.to_canonical().is_loopback())
            .unwrap_or(false)
    }

    /// Checks every `Host` header of `request`: `None` when all are allowed (a request without
    /// `Host` passes, since no browser sends one), else 403 `{"error":"forbidden host"}`.
    pub fn check(&self, request: &Request) -> Option<Response> {
        if request.header_values("host").all(|v| self.allows(v)) {
            None
        } else {
            Some(Response::error(403, "forbidden host"))
        }
    }
}

/// A predicate deciding which requests skip the bearer check: `(method, path) -> exempt`.
pub type AuthExemption = Arc<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// Optional bearer-token authentication (HOST.md §10.3): every request must carry
/// `Authorization: Bearer <token>`, compared in constant time, unless the exemption predicate
/// (e.g. `GET /health`) says otherwise.
#[derive(Clone)]
pub struct BearerAuth {
    token_hash: blake3::Hash,
    realm: String,
    exempt: Option<AuthExemption>,
}

impl std::fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BearerAuth")
            .field("realm", &self.realm)
            .field("token", &"<redacted>")
            .finish()
    }
}

impl BearerAuth {
    /// Requires `token` on every request; the 401 carries
    /// `WWW-Authenticate: Bearer realm="reactor"`.
    pub fn new(token: &str) -> BearerAuth {
        BearerAuth {
            token_hash: blake3::hash(token.as_bytes()),
            realm: "reactor".to_owned(),
            exempt: None,
        }
    }

    /// Exempts requests for which `exempt(method, path)` is true.
    pub fn with_exemption<F>(mut self, exempt: F) -> BearerAuth
    where
        F: Fn(&str, &str) -> bool + Send + Sync + 'static,
    {
        self.exempt = Some(Arc::new(exempt));
        self
    }

    /// Whether an `Authorization` header value carries the token. The scheme is matched
    /// case-insensitively; the comparison is of BLAKE3 digests, whose equality is constant-time,
    /// so neither content nor length of the token leaks through timing.
    pub fn accepts(&self, authorization: &str) -> bool {
        let value = authorization.trim();
        let Some((scheme, credentials)) = value.split_once(' ') else {
            return false;
        };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return false;
        }
        blake3::hash(credentials.trim().as_bytes()) == self.token_hash
    }

    /// `None` when the request is exempt or carries the token; else 401
    /// `{"error":"missing or invalid bearer token"}` with `WWW-Authenticate`.
    pub fn check(&self, request: &Request) -> Option<Response> {
        if let Some(exempt) = &self.exempt
            && exempt(request.method(), request.path())
        {
            return None;
        }
        if request
            .header("authorization")
            .is_some_and(|v| self.accepts(v))
        {
            return None;
        }
        Some(
            Response::error(401, "missing or invalid bearer token").with_header(
                "www-authenticate",
                &format!("Bearer realm=\"{}\"", self.realm),
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for h in [
            "localhost",
            "LOCALHOST",
            "127.0.0.1",
            "127.9.8.7",
            "::1",
            "[::1]",
        ] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "0.0.0.0",
            "192.168.1.1",
            "example.com",
            "::",
            "[::]",
            "localhost.",
            "",
        ] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }

    #[test]
    fn host_allow_list_rules() {
        let list = HostAllowList::new("127.0.0.1");
        for ok in [
            "localhost",
            "localhost:5173",
            "LocalHost:1",
            "127.0.0.1",
            "127.0.0.1:8080",
            "127.1.2.3:9",
            "[::1]",
            "[::1]:80",
            "[::ffff:127.0.0.1]:80",
            "localhost:",
        ] {
            assert!(list.allows(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:80",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "[::2]:80",
            "::1",
            "[::1",
            "[nope]:1",
            "localhost:80x",
            "",
            ":80",
            "0x7f.0.0.1",
            "127.1",
            "10.0.0.1:80",
        ] {
            assert!(!list.allows(bad), "{bad}");
        }
        let named = HostAllowList::new("MyBox.local");
        assert!(named.allows("mybox.local:3000"));
        assert!(!named.allows("other.local:3000"));
        let v6 = HostAllowList::new("[fe80::1]");
        assert!(v6.allows("[fe80::1]:1"));
    }

    #[test]
    fn host_check_on_requests() {
        let list = HostAllowList::new("localhost");
        let ok = Request::synthetic("GET", "/", &[("Host", "localhost:1")], Vec::new());
        assert!(list.check(&ok).is_none());
        let none = Request::synthetic("GET", "/", &[], Vec::new());
        assert!(list.check(&none).is_none());
        let bad = Request::synthetic(
            "GET",
            "/",
            &[("Host", "localhost"), ("host", "evil.example")],
            Vec::new(),
        );
        let resp = list.check(&bad).unwrap();
        assert_eq!(resp.status(), 403);
        assert_eq!(resp.body_bytes().unwrap(), br#"{"error":"forbidden host"}"#);
    }

    #[test]
    fn bearer_rules() {
        let auth = BearerAuth::new("s3cret-token-0123456789")
            .with_exemption(|m, p| m == "GET" && p == "/health");
        assert!(auth.accepts("Bearer s3cret-token-0123456789"));
        assert!(auth.accepts("bearer   s3cret-token-0123456789 "));
        assert!(!auth.accepts("Bearer s3cret-token-012345678"));
        assert!(!auth.accepts("Basic s3cret-token-0123456789"));
        assert!(!auth.accepts("s3cret-token-0123456789"));
        assert!(!auth.accepts(""));
        let health = Request::synthetic("GET", "/health?x", &[], Vec::new());
        assert!(auth.check(&health).is_none());
        let post = Request::synthetic("POST", "/health", &[], Vec::new());
        let resp = auth.check(&post).unwrap();
        assert_eq!(resp.status(), 401);
        assert_eq!(
            resp.header("www-authenticate"),
            Some("Bearer realm=\"reactor\"")
        );
        assert_eq!(
            resp.body_bytes().unwrap(),
            br#"{"error":"missing or invalid bearer token"}"#
        );
        assert!(format!("{auth:?}").contains("redacted"));
    }
}
