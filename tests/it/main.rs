//! The integration suite (one test binary). Modules group the suites by room.

mod support;

mod browser;
mod compat;
mod compile_cache;
mod compile_properties;
mod connectors;
mod contracts;
mod core_invariants;
mod crash;
mod daemon;
mod devtools;
mod dist;
mod export;
mod fixtures;
mod format_properties;
mod host_cli;
mod host_compile;
mod host_operate;
mod host_ops;
mod host_serve;
mod hostile_http;
mod http_layer;
mod json_differential;
mod ledger_refusal;
mod library_surface;
mod model_providers;
mod parallel;
mod parallel_agent;
mod reader_growth;
mod render_loop;
mod router_properties;
mod simple_formats;
mod tool_properties;
mod why;
