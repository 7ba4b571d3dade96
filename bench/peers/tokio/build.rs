// Records the tokio version that Cargo resolved (read from Cargo.lock) so the
// benchmark can report it in its JSON line.
fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let lock = std::fs::read_to_string(format!("{}/Cargo.lock", dir)).unwrap_or_default();
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l.trim() == "name = \"tokio\"" {
            if let Some(v) = lines.next().and_then(|v| v.trim().strip_prefix("version = ")) {
                println!("cargo:rustc-env=PEER_TOKIO_VERSION={}", v.trim_matches('"'));
            }
            break;
        }
    }
}
