//! Embedded static assets (VIEWER.md §6.7): path normalization without percent-decoding,
//! content types, ETags, and lookups in an in-memory map — the file system is never consulted,
//! so nothing outside the embedded set can be served.

use super::response::{Response, etag_for};

/// Normalizes a request path per VIEWER.md §6.7: drop a query, strip the leading `/`, split on
/// `/`, drop empty and `.` segments, let `..` remove the previous segment (ignored at the
/// root), and never percent-decode. `/` (and anything normalizing to nothing) gives
/// `index.html`. Backslashes are ordinary characters.
///
/// `"/a/./b/../c"` → `"a/c"`; `"/../../Cargo.toml"` → `"Cargo.toml"`; `"/%2e%2e/x"` →
/// `"%2e%2e/x"`.
pub fn normalize_asset_path(path: &str) -> String {
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    if segments.is_empty() {
        "index.html".to_owned()
    } else {
        segments.join("/")
    }
}

/// The content type for an asset name by extension (VIEWER.md §6.7): `.html`, `.js`, `.css`,
/// `.json` (all `; charset=utf-8`), `.svg`; anything else `application/octet-stream`.
pub fn content_type_for(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json; charset=utf-8",
        "svg" => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

struct Asset {
    name: String,
    bytes: &'static [u8],
    etag: String,
    extra_headers: Vec<(String, String)>,
}

/// A set of embedded files served by name.
pub struct StaticAssets {
    files: Vec<Asset>,
}

impl std::fmt::Debug for StaticAssets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.files.iter().map(|a| (&a.name, a.bytes.len())))
            .finish()
    }
}

impl StaticAssets {
    /// Assets from `(name, bytes)` pairs, names relative without a leading `/`
    /// (`"index.html"`, `"app.js"`). A later duplicate name is ignored.
    pub fn from_pairs(files: &[(&str, &'static [u8])]) -> StaticAssets {
        let mut assets = StaticAssets { files: Vec::new() };
        for (name, bytes) in files {
            assets.insert(name, bytes);
        }
        assets
    }

    /// Every file of an `include_dir!` directory, recursively, named by its path relative to
    /// the directory with `/` separators. Files whose path is not UTF-8 are skipped.
    pub(crate) fn from_dir(dir: &'static include_dir::Dir<'static>) -> StaticAssets {
        let mut assets = StaticAssets { files: Vec::new() };
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for file in d.files() {
                if let Some(name) = file.path().to_str() {
                    let name = name.replace('\\', "/");
                    assets.insert(&name, file.contents());
                }
            }
            stack.extend(d.dirs());
        }
        assets.files.sort_by(|a, b| a.name.cmp(&b.name));
        assets
    }

    fn insert(&mut self, name: &str, bytes: &'static [u8]) {
        let name = name.trim_start_matches('/');
        if self.files.iter().any(|a| a.name == name) {
            return;
        }
        self.files.push(Asset {
            name: name.to_owned(),
            bytes,
            etag: etag_for(bytes),
            extra_headers: Vec::new(),
        });
    }

    /// Adds a header to every response for asset `name` (e.g. the `content-security-policy` of
    /// `index.html`, VIEWER.md §6.7). Unknown names are ignored.
    pub fn with_header(mut self, name: &str, header: &str, value: &str) -> StaticAssets {
        if let Some(asset) = self.files.iter_mut().find(|a| a.name == name) {
            asset
                .extra_headers
                .push((header.to_ascii_lowercase(), value.to_owned()));
        }
        self
    }

    /// The embedded names, sorted for `from_dir`, in insertion order for `from_pairs`.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|a| a.name.as_str())
    }

    /// The bytes of the asset a request path names after normalization, if any.
    pub fn get(&self, request_path: &str) -> Option<&'static [u8]> {
        let name = normalize_asset_path(request_path);
        self.files.iter().find(|a| a.name == name).map(|a| a.bytes)
    }

    /// The 200 response for the asset a request path names (content type, `etag`, extra
    /// headers), or `None` when it names none — directories included; the caller answers
    /// [`Response::not_found_text`].
    pub fn respond(&self, request_path: &str) -> Option<Response> {
        let name = normalize_asset_path(request_path);
        let asset = self.files.iter().find(|a| a.name == name)?;
        let mut response =
            Response::bytes(200, content_type_for(&asset.name), asset.bytes.to_vec())
                .with_header("etag", &asset.etag);
        for (n, v) in &asset.extra_headers {
            response.set_header(n, v);
        }
        Some(response)
    }

    /// [`StaticAssets::respond`] or the viewer's `404 text/plain Not found`.
    pub fn respond_or_404(&self, request_path: &str) -> Response {
        self.respond(request_path)
            .unwrap_or_else(Response::not_found_text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_rules() {
        assert_eq!(normalize_asset_path("/"), "index.html");
        assert_eq!(normalize_asset_path(""), "index.html");
        assert_eq!(normalize_asset_path("/index.html"), "index.html");
        assert_eq!(normalize_asset_path("//app.js"), "app.js");
        assert_eq!(normalize_asset_path("/./a/./b/../c"), "a/c");
        assert_eq!(normalize_asset_path("/../../Cargo.toml"), "Cargo.toml");
        assert_eq!(normalize_asset_path("/a/../../b"), "b");
        assert_eq!(normalize_asset_path("/%2e%2e/%2e%2e/x"), "%2e%2e/%2e%2e/x");
        assert_eq!(
            normalize_asset_path("/..\\..\\Cargo.toml"),
            "..\\..\\Cargo.toml"
        );
        assert_eq!(normalize_asset_path("/app.js?v=1"), "app.js");
        assert_eq!(normalize_asset_path("/x/.."), "index.html");
    }

    #[test]
    fn content_types() {
        assert_eq!(content_type_for("index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type_for("app.js"), "text/javascript; charset=utf-8");
        assert_eq!(content_type_for("app.css"), "text/css; charset=utf-8");
        assert_eq!(
            content_type_for("a.JSON"),
            "application/json; charset=utf-8"
        );
        assert_eq!(content_type_for("i.svg"), "image/svg+xml");
        assert_eq!(content_type_for("x.png"), "application/octet-stream");
        assert_eq!(content_type_for("Makefile"), "application/octet-stream");
    }

    static FILES: &[(&str, &[u8])] = &[
        ("index.html", b"<!doctype html>"),
        ("app.js", b"console.log(1)"),
        ("sub/x.css", b"a{}"),
    ];

    #[test]
    fn lookups_and_responses() {
        let assets = StaticAssets::from_pairs(FILES).with_header(
            "index.html",
            "Content-Security-Policy",
            "default-src 'self'",
        );
        assert_eq!(assets.get("/"), Some(&b"<!doctype html>"[..]));
        assert_eq!(assets.get("/sub/../app.js"), Some(&b"console.log(1)"[..]));
        assert_eq!(assets.get("/sub"), None);
        assert_eq!(assets.get("/sub/"), None);
        assert_eq!(assets.get("/../../Cargo.toml"), None);
        assert_eq!(assets.get("/%61pp.js"), None);
        let r = assets.respond("/index.html").unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        assert_eq!(
            r.header("content-security-policy"),
            Some("default-src 'self'")
        );
        assert_eq!(
            r.header("etag"),
            Some(etag_for(b"<!doctype html>").as_str())
        );
        let r = assets.respond_or_404("/nope");
        assert_eq!(r.status(), 404);
        assert_eq!(r.body_bytes().unwrap(), b"Not found");
        assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
        assert_eq!(assets.names().count(), 3);
    }

    static DIR: include_dir::Dir<'static> =
        include_dir::include_dir!("$CARGO_MANIFEST_DIR/src/http");

    #[test]
    fn from_dir_embeds_nested_files() {
        let assets = StaticAssets::from_dir(&DIR);
        assert!(assets.names().any(|n| n == "assets.rs"));
        assert!(assets.get("/mod.rs").is_some());
        assert_eq!(assets.get("/../Cargo.toml"), None);
    }
}
