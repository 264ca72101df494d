//! GCPARSE_SOURCE_HASH: FNV-1a of the crate's sources, so that setup can tell whether the
//! installed module was built from this source (same as tools/source_hash.py).
use std::fs;
use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<String> = vec!["Cargo.toml".into(), "Cargo.lock".into(), "pyproject.toml".into(), "build.rs".into()];
    for dir in ["src", "python/brokerscope_gcparse"] {
        if let Ok(rd) = fs::read_dir(root.join(dir)) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if name.ends_with(".rs") || name.ends_with(".py") {
                    files.push(format!("{dir}/{name}"));
                }
            }
        }
        println!("cargo:rerun-if-changed={dir}");
    }
    files.sort();
    let mut h: u64 = 0xcbf29ce484222325;
    for f in &files {
        let data = fs::read(root.join(f)).unwrap_or_default();
        for b in f.as_bytes().iter().chain(b"\0").chain(data.iter()) {
            h ^= *b as u64;
            h = h.wrapping_mul(0x100000001b3);
        }
        println!("cargo:rerun-if-changed={f}");
    }
    println!("cargo:rustc-env=GCPARSE_SOURCE_HASH={h:016x}");
}
