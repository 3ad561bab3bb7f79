//! Test support shared by the integration tests (`mod support;`).
//!
//! Not every test binary uses every helper.
#![allow(dead_code)]

pub mod fake_provider;
