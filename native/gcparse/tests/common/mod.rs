//! Shared by the scanner tests: the shared GC-log corpus, read if present.

/// The text (lossy UTF-8) of every file under `/work/shared/corpus/gc/<sub>`, depth first; none
/// when the corpus is absent.
pub fn corpus_texts(sub: &str) -> Vec<String> {
    let root = std::path::Path::new("/work/shared/corpus/gc").join(sub);
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                out.push(String::from_utf8_lossy(&b).into_owned());
            }
        }
    }
    assert!(!root.is_dir() || !out.is_empty(), "the corpus at {} holds no file", root.display());
    out
}
