//! Version strings (a leaf module: it imports nothing from the crate, so every room may use it).

/// The crate version, from `Cargo.toml` (`reactor --version`, `doctor`'s `version` field, the
/// `User-Agent` of outbound requests, and the compile cache's `sdk_version`, FORMATS.md).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The viewer version fixed by the interface specification (`reactor-devtools -V`, VIEWER.md).
pub const DEVTOOLS_VERSION: &str = "0.2.0";
