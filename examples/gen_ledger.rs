//! Writes a synthetic state directory for the viewer's scale benchmarks
//! (`tests/browser/bench.mjs`): a layered topology of N nodes and M receipts with valid hash
//! chains, deterministic for a given seed (see `reactor::devtools::synthetic`).
//!
//! Usage: `cargo run --release --example gen_ledger -- <dir> [--nodes N] [--receipts M] [--seed S]`
//! (defaults: 400 nodes, 100000 receipts, seed 1). `<dir>` must be absent or empty. Prints one
//! line: `<dir>: <N> nodes · <E> edges · <L> layers · <M> receipts · <bytes> bytes`.

use std::path::PathBuf;
use std::process::ExitCode;

use reactor::devtools::synthetic::{SyntheticSpec, write_synthetic_state_dir};

const USAGE: &str =
    "usage: gen_ledger <dir> [--nodes N] [--receipts M] [--seed S]  (defaults 400, 100000, 1)";

fn main() -> ExitCode {
    let mut dir: Option<PathBuf> = None;
    let mut spec = SyntheticSpec {
        nodes: 400,
        receipts: 100_000,
        seed: 1,
    };
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        let a = a.to_string_lossy().into_owned();
        let mut number = |name: &str| -> Result<u64, String> {
            let v = args
                .next()
                .ok_or_else(|| format!("missing value for {name}"))?;
            v.to_string_lossy()
                .parse::<u64>()
                .map_err(|_| format!("{name} needs a non-negative integer"))
        };
        let res = match a.as_str() {
            "--nodes" => number("--nodes").map(|v| spec.nodes = v as usize),
            "--receipts" => number("--receipts").map(|v| spec.receipts = v as usize),
            "--seed" => number("--seed").map(|v| spec.seed = v),
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            s if s.starts_with('-') => Err(format!("unknown option {s}")),
            _ if dir.is_none() => {
                dir = Some(PathBuf::from(&a));
                Ok(())
            }
            _ => Err(format!("unexpected argument {a}")),
        };
        if let Err(e) = res {
            eprintln!("gen_ledger: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    }
    let Some(dir) = dir else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    match write_synthetic_state_dir(&dir, &spec) {
        Ok(out) => {
            println!(
                "{}: {} nodes · {} edges · {} layers · {} receipts · {} bytes",
                dir.display(),
                out.nodes,
                out.edges,
                out.layers,
                out.receipts,
                out.bytes
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen_ledger: {e}");
            ExitCode::FAILURE
        }
    }
}
