//! The hand-written young-line scanner (legacy_fast.rs) against the regex it replaces
//! (vocab::FAST_YOUNG): every line of the legacy corpus, plus proptest mutations of them.
mod common;

use brokerscope_gcparse::fastnum::dec_f64;
use brokerscope_gcparse::legacy_fast::{scan_young, Young};
use brokerscope_gcparse::legacy_res::res;
use proptest::prelude::*;

fn by_regex(line: &str) -> Option<Young<'_>> {
    let c = res().fast_young.captures(line)?;
    let g = |n: &str| c.name(n).map(|m| m.as_str());
    Some(Young {
        date: g("date"),
        up: g("up"),
        gcid: g("gcid"),
        cause: g("cause"),
        gen: g("gen").unwrap(),
        yb: g("yb").unwrap(),
        ya: g("ya").unwrap(),
        yc: g("yc").unwrap(),
        hb: g("hb").unwrap(),
        ha: g("ha").unwrap(),
        hc: g("hc").unwrap(),
        t: g("t").unwrap(),
        times: g("tu").map(|u| (u, g("ts").unwrap(), g("tr").unwrap())),
        kb: ["hb", "ha", "hc", "yb", "ya", "yc"].map(|n| g(n).unwrap().parse().unwrap()),
        vals: ["up", "t", "tu", "ts", "tr"].map(|n| g(n).and_then(|t| dec_f64(t.replace(',', ".").as_bytes()))),
    })
}

const SAMPLES: &[&str] = &[
    "2012-10-19T18:28:46.210+0100: 2.193: [GC 2.193: [DefNew: 17024K->643K(19136K), 0.0084810 secs] 17024K->643K(260032K), 0.0085510 secs] [Times: user=0.00 sys=0.00, real=0.01 secs] \n",
    "1.5: [GC (Allocation Failure) [PSYoungGen: 1K->2K(3K)] 4K->5K(6K), 0.0010 secs]\n",
    "#12: [GC (System.gc()) 3.0: [ParNew: 1K->2K(3K), 0.1 secs] 4K->5K(6K), 0.2 secs]\r\n",
    "2.0: [GC[DefNew: 1K->2K(3K), 0.1 secs] 4K->5K(6K), 0.2 secs]",
];

/// Every line of the legacy corpus files (if the shared corpus is present).
fn corpus_lines() -> Vec<String> {
    common::corpus_texts("gctoolkit/preunified")
        .iter()
        .flat_map(|t| t.split_inclusive('\n').map(str::to_string).collect::<Vec<_>>())
        .collect()
}

#[test]
fn samples_and_corpus_agree() {
    let mut n_match = 0;
    let lines = corpus_lines();
    for l in SAMPLES.iter().map(|s| s.to_string()).chain(lines) {
        let want = by_regex(&l);
        n_match += want.is_some() as usize;
        assert_eq!(scan_young(&l), want, "line {l:?}");
    }
    assert!(n_match >= 4);
}

fn mutate(base: &str, at: usize, cut: usize, ins: &str) -> String {
    let b: Vec<char> = base.chars().collect();
    let at = at % (b.len() + 1);
    let end = (at + cut).min(b.len());
    b[..at].iter().chain(ins.chars().collect::<Vec<_>>().iter()).chain(b[end..].iter()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20000))]
    #[test]
    fn mutations_agree(i in 0..SAMPLES.len(), at in 0usize..200, cut in 0usize..4,
                       ins in "[0-9 .,:()\\[\\]#KGC+\\-TZa-z\u{e9}\u{660}\t\r\n]{0,4}") {
        let l = mutate(SAMPLES[i], at, cut, &ins);
        prop_assert_eq!(scan_young(&l), by_regex(&l), "line {:?}", l);
    }
}
