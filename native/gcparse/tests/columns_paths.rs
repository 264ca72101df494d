//! The columnar path (events written straight into the Arrow columns, young rows without an
//! Event) gives the columns of the GcEvent path's events pushed one by one, on every file of
//! the corpus.
mod common;

use brokerscope_gcparse::columns::{Columns, Fixed, Strs};
use brokerscope_gcparse::{Event, Parser};

fn by_sink(data: &[u8]) -> Columns {
    let mut p = Parser::new(None, false, 50);
    let mut c = Columns::default();
    brokerscope_gcparse::columns::feed_bytes(&mut p, data, true, &mut c).unwrap();
    p.finish(&mut c);
    c
}

fn by_events(data: &[u8]) -> Columns {
    let mut p = Parser::new(None, false, 50);
    let mut out: Vec<Event> = Vec::new();
    p.feed_bytes(data, &mut out).unwrap();
    p.end_text(&mut out);
    p.finish(&mut out);
    let mut c = Columns::default();
    out.iter().for_each(|e| c.push(e));
    c
}

fn fixed<T: Copy>(f: &Fixed<T>, bits: impl Fn(T) -> u64) -> (Vec<u8>, Vec<u64>, usize) {
    (f.valid.clone(), f.values.iter().map(|v| bits(*v)).collect(), f.nulls)
}

fn strs(s: &Strs) -> (Vec<u8>, Vec<i32>, Vec<u8>, usize) {
    (s.valid.clone(), s.offsets.clone(), s.data.clone(), s.nulls)
}

fn assert_same(a: &Columns, b: &Columns, what: &str) {
    assert_eq!(a.rows, b.rows, "{what}: rows");
    for (x, y) in a.strs.iter().zip(&b.strs) {
        assert_eq!(strs(x), strs(y), "{what}");
    }
    for (x, y) in a.f64s.iter().zip(&b.f64s) {
        assert_eq!(fixed(x, f64::to_bits), fixed(y, f64::to_bits), "{what}");
    }
    for (x, y) in a.kbs.iter().chain([&a.gc_id, &a.wall]).zip(b.kbs.iter().chain([&b.gc_id, &b.wall])) {
        assert_eq!(fixed(x, |v| v as u64), fixed(y, |v| v as u64), "{what}");
    }
    assert_eq!(a.source_line, b.source_line, "{what}");
    assert_eq!(a.patches, b.patches, "{what}");
}

#[test]
fn columnar_path_is_the_event_path() {
    let mut rows = 0;
    for (k, text) in common::corpus_texts("").iter().enumerate() {
        let (a, b) = (by_sink(text.as_bytes()), by_events(text.as_bytes()));
        assert_same(&a, &b, &format!("corpus file #{k}"));
        rows += a.rows;
    }
    let sample = b"2.0: [GC 2.0: [DefNew: 1K->2K(3K), 0.1 secs] 4K->5K(6K), 0.2 secs] [Times: user=0.01 sys=0.00, real=99999999999.00 secs]\n";
    assert_same(&by_sink(sample), &by_events(sample), "implausible real time");
    assert!(rows > 0 || !std::path::Path::new("/work/shared/corpus/gc").is_dir());
}
