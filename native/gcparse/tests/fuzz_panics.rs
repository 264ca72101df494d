//! Panic fuzzing of the core (proptest harness; cargo-fuzz is not installed here): arbitrary
//! bytes, corpus lines with random edits, and arbitrary chunkings go through feed_bytes,
//! feed, flush, finish, time_span and the columnar conversion; any panic fails the test.
//!
//!     PROPTEST_CASES=200000 cargo test --release --no-default-features --test fuzz_panics
use brokerscope_gcparse::columns::Columns;
use brokerscope_gcparse::Parser;
use proptest::prelude::*;

const SEEDS: &[&str] = &[
    "[2023-01-02T03:04:05.678+0100][12.345s][info][gc,start] GC(1) Pause Young (Normal) (G1 Evacuation Pause)\n",
    "[12.350s][info][gc,heap] GC(1) Eden regions: 24->0(30)\n",
    "[12.351s][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 24M->3M(256M) 5.123ms\n",
    "[0.100s][info][gc,cpu] GC(1) User=0.01s Sys=0.00s Real=0.01s\n",
    "[1.000s][info][gc] GC(7) Major Collection (Proactive) 1G(10%)->500M(5%) 12.3ms\n",
    "[1.000s][info][gc] GC(3) Concurrent Mark Cycle 30.5ms\n",
    "[1.000s][info][safepoint] Safepoint \"G1CollectForAllocation\", Time since last: 1 ns, Reaching safepoint: 2 ns, Cleanup: 3 ns, At safepoint: 4 ns, Total: 10 ns\n",
    "2012-10-19T18:28:46.210+0100: 2.193: [GC 2.193: [DefNew: 17024K->643K(19136K), 0.0084810 secs] 17024K->643K(260032K), 0.0085510 secs] [Times: user=0.00 sys=0.00, real=0.01 secs] \n",
    "5.0: [Full GC (System.gc()) [PSYoungGen: 1K->0K(3K)] [ParOldGen: 4K->5K(6K)] 5K->5K(9K), [Metaspace: 1K->1K(2K)], 0.1 secs]\n",
    "1.0: [GC (CMS Initial Mark) [1 CMS-initial-mark: 10K(20K)] 12K(30K), 0.001 secs]\n",
    "1.1: [CMS-concurrent-mark-start]\n1.2: [CMS-concurrent-mark: 0.010/0.020 secs]\n",
    "Total time for which application threads were stopped: 0.0001 seconds, Stopping threads took: 0.00001 seconds\n",
    "{Heap before GC invocations=1 (full 0):\n par new generation   total 1K, used 1K\n}\n",
];

fn run(chunks: &[Vec<u8>], collector: Option<&str>, flush_every: usize) {
    let mut p = Parser::new(collector, true, 3);
    let mut out = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        let _ = p.feed_bytes(c, &mut out);
        if flush_every > 0 && i % flush_every == 0 {
            p.flush(&mut out);
        }
    }
    p.end_text(&mut out);
    p.finish(&mut out);
    let _ = p.time_span();
    let mut cols = Columns::default();
    out.iter().for_each(|e| cols.push(e));
    assert_eq!(cols.rows, out.len());
}

fn edits() -> impl Strategy<Value = Vec<(usize, usize, Vec<u8>)>> {
    let piece = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..6),
        "[0-9\\[\\]():,.KMG>\\- ]{0,6}".prop_map(|s| s.into_bytes()),
        Just(b"\xc3".to_vec()),
        Just("\u{660}\u{1f600}\u{2028}\r".as_bytes().to_vec()),
        Just(b"99999999999999999999999".to_vec()),
    ];
    proptest::collection::vec((any::<usize>(), 0usize..5, piece), 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3000)))]

    #[test]
    fn arbitrary_bytes(data in proptest::collection::vec(any::<u8>(), 0..2000), cut in any::<usize>()) {
        let k = cut % (data.len() + 1);
        run(&[data[..k].to_vec(), data[k..].to_vec()], None, 0);
    }

    #[test]
    fn edited_corpus_lines(idx in proptest::collection::vec(0..SEEDS.len(), 1..12), ed in edits(),
                           cuts in proptest::collection::vec(any::<usize>(), 0..6),
                           coll in prop_oneof![Just(None), Just(Some("g1")), Just(Some("cms"))],
                           flush_every in 0usize..4) {
        let mut text: Vec<u8> = idx.iter().flat_map(|&i| SEEDS[i].bytes()).collect();
        for (at, cut, ins) in ed {
            let at = at % (text.len() + 1);
            let end = (at + cut).min(text.len());
            text.splice(at..end, ins);
        }
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
        points.extend([0, text.len()]);
        points.sort_unstable();
        let chunks: Vec<Vec<u8>> = points.windows(2).map(|w| text[w[0]..w[1]].to_vec()).collect();
        run(&chunks, coll, flush_every);
    }
}
