//! Pure-Rust driver of the core (no Python): parse a GC log, print events, lines and seconds.
//! For profiling (`valgrind --tool=callgrind`, `perf`) and `cargo run --release --example`.
//!
//!     cargo run --release --no-default-features --example parse_file -- LOG [repeat]
use brokerscope_gcparse::Parser;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: parse_file LOG [repeat]");
    let repeat: usize = args.next().map_or(1, |r| r.parse().expect("repeat"));
    let data = std::fs::read(&path).expect("read");
    for _ in 0..repeat {
        let t0 = Instant::now();
        let mut p = Parser::new(None, false, 50);
        let mut out = Vec::new();
        p.feed_bytes(&data, &mut out);
        p.end_text(&mut out);
        p.finish(&mut out);
        let s = t0.elapsed().as_secs_f64();
        let mb = data.len() as f64 / 1e6;
        println!("{} events, {} lines, {:.3} s, {:.1} MB/s", out.len(), p.o.stats.lines_total, s, mb / s);
    }
}
