// Rebuild when the embedded SPA assets or bundled fixtures change (include_dir embeds them).
fn main() {
    println!("cargo:rerun-if-changed=assets");
    println!("cargo:rerun-if-changed=fixtures");
}
