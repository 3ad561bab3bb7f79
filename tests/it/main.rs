//! The integration suite (one test binary). Modules group the suites by room.

mod support;

mod browser;
mod compat;
mod compile_cache;
mod connectors;
mod contracts;
mod core_invariants;
mod crash;
mod daemon;
mod devtools;
mod dist;
mod fixtures;
mod host_cli;
mod host_compile;
mod host_operate;
mod host_ops;
mod host_serve;
mod hostile_http;
mod http_layer;
mod ledger_refusal;
mod model_providers;
mod parallel;
mod parallel_agent;
mod reader_growth;
mod render_loop;
mod simple_formats;
