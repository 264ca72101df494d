//! Pure-Rust driver of the core (no Python): parse a GC log, print events, lines and seconds.
//! For profiling (`valgrind --tool=callgrind`, `perf`) and `cargo run --release --example`.
//! `--columns` also builds the Arrow columns of the events (what the columnar path does).
//!
//!     cargo run --release --no-default-features --example parse_file -- LOG [repeat] [--columns]
use brokerscope_gcparse::columns::Columns;
use brokerscope_gcparse::Parser;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let columns = args.iter().any(|a| a == "--columns");
    let mut pos = args.iter().filter(|a| !a.starts_with("--"));
    let path = pos.next().expect("usage: parse_file LOG [repeat] [--columns]");
    let repeat: usize = pos.next().map_or(1, |r| r.parse().expect("repeat"));
    let data = std::fs::read(path).expect("read");
    for _ in 0..repeat {
        let t0 = Instant::now();
        let mut p = Parser::new(None, false, 50);
        let mut out = Vec::new();
        let mut cols = Columns::default();
        if columns {
            // as the binding's collect_bytes / take_columns(finish=True)
            brokerscope_gcparse::columns::feed_bytes(&mut p, &data, true, &mut cols).expect("bounds");
            p.finish(&mut cols);
        } else {
            p.feed_bytes(&data, &mut out).expect("bounds");
            p.end_text(&mut out);
            p.finish(&mut out);
        }
        let n = out.len().max(cols.rows);
        drop(out);
        let s = t0.elapsed().as_secs_f64();
        let mb = data.len() as f64 / 1e6;
        println!("{} events, {} rows, {} lines, {:.3} s, {:.1} MB/s", n, cols.rows, p.o.stats.lines_total, s, mb / s);
    }
}
