//! Shared test support: temp state dirs, the compat corpus location, process helpers.
#![allow(dead_code)]

use std::path::PathBuf;

/// `../shared` relative to the repository root.
pub fn shared_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared")
}

/// The compat corpus, or `None` (with a loud note) when it is missing and not required.
/// With `REACTOR_REQUIRE_COMPAT=1` (set by `.ci/run`) a missing corpus fails the test.
pub fn compat_dir() -> Option<PathBuf> {
    let d = shared_dir().join("compat");
    if d.is_dir() {
        return Some(d);
    }
    if std::env::var("REACTOR_REQUIRE_COMPAT").as_deref() == Ok("1") {
        panic!(
            "the compat corpus {} is missing (REACTOR_REQUIRE_COMPAT=1)",
            d.display()
        );
    }
    eprintln!(
        "SKIPPED: the compat corpus {} is missing; set it up beside the repository to run this test",
        d.display()
    );
    None
}

/// The built binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_reactor"))
}
pub mod fake_provider;
pub mod raw_server;
pub mod smallest;
