//! The hand-written `GC(n)` message and safepoint scanners (unified_scan.rs) against the
//! regexes they replace: the messages of every unified corpus line, plus proptest mutations.
mod common;

use brokerscope_gcparse::rx::Re;
use brokerscope_gcparse::unified::plain_res;
use brokerscope_gcparse::unified_gc_match::res;
use brokerscope_gcparse::unified_scan::{self as scan, plain, GcEnd, GcStart};
use proptest::prelude::*;

fn g<'a>(c: &regex::Captures<'a>, n: &str) -> Option<&'a str> {
    c.name(n).map(|m| m.as_str())
}

fn end_rx<'a>(re: &Re, s: &'a str) -> Option<GcEnd<'a>> {
    let c = re.captures(s)?;
    let dur = c.name("dur").unwrap();
    Some(GcEnd {
        name: g(&c, "name").unwrap(),
        quals: g(&c, "quals").unwrap_or(""),
        heap: c.name("hb").map(|m| (m.start(), m.as_str(), g(&c, "ha").unwrap(), g(&c, "hc").unwrap())),
        dur_start: dur.start(),
        dur: dur.as_str(),
        unit: g(&c, "unit").unwrap(),
    })
}

fn start_rx<'a>(re: &Re, s: &'a str) -> Option<GcStart<'a>> {
    let c = re.captures(s)?;
    Some(GcStart { name: g(&c, "name").unwrap(), quals: g(&c, "quals").unwrap_or("") })
}

type ZC<'a> = Option<(&'a str, &'a str, Option<(usize, &'a str, &'a str, Option<&'a str>)>)>;

fn zc_rx(s: &str) -> ZC<'_> {
    let r = res();
    if let Some(c) = r.zcycle_end.captures(s) {
        let hb = c.name("hb").unwrap();
        return Some((g(&c, "name").unwrap(), g(&c, "quals").unwrap(), Some((hb.start(), hb.as_str(), g(&c, "ha").unwrap(), g(&c, "dur")))));
    }
    let c = r.zcycle_start.captures(s)?;
    Some((g(&c, "name").unwrap(), g(&c, "quals").unwrap(), None))
}

/// Every scanner on `s` (a message after `GC(n) `, or a whole message) against its regex.
fn check(s: &str) -> Result<(), String> {
    if !plain(s) {
        return Ok(());
    }
    let r = res();
    let p = plain_res();
    let fail = |what: &str, a: String, b: String| Err(format!("{what} on {s:?}: scan {a} regex {b}"));
    for (prefix, end, start) in [("Pause ", &r.pause_end, &r.pause_start), ("Concurrent ", &r.conc_end, &r.conc_start)] {
        let (a, b) = (scan::gc_end(s, prefix), end_rx(end, s));
        if a != b {
            return fail("end", format!("{a:?}"), format!("{b:?}"));
        }
        let (a, b) = (scan::gc_start(s, prefix), start_rx(start, s));
        if a != b {
            return fail("start", format!("{a:?}"), format!("{b:?}"));
        }
        if let Some(e) = a.map(|x| x.quals).or(scan::gc_end(s, prefix).map(|x| x.quals)) {
            let want: Vec<&str> = r.quals.captures_iter(e).map(|c| c.get(1).unwrap().as_str()).collect();
            if scan::split_quals(e) != want {
                return fail("quals", format!("{:?}", scan::split_quals(e)), format!("{want:?}"));
            }
        }
    }
    let (a, b) = (scan::cpu(s), r.cpu.captures(s).map(|c| (c.get(1).unwrap().as_str(), c.get(2).unwrap().as_str(), c.get(3).unwrap().as_str())));
    if a != b {
        return fail("cpu", format!("{a:?}"), format!("{b:?}"));
    }
    let (a, b) = (scan::regions(s), r.regions.captures(s).map(|c| (g(&c, "kind").unwrap(), g(&c, "b").unwrap(), g(&c, "a").unwrap())));
    if a != b {
        return fail("regions", format!("{a:?}"), format!("{b:?}"));
    }
    if let Some(colon) = s.find(':') {
        let key = &s[..colon];
        if ["DefNew", "Tenured", "PSYoungGen", "ParOldGen", "PSOldGen", "ParNew", "CMS", "Metaspace", "Perm"].contains(&key) {
            let a = scan::gen_sizes(s, key);
            let b = r.gen.captures(s).map(|c| (g(&c, "b").unwrap(), g(&c, "a").unwrap(), g(&c, "c").unwrap()));
            if a != b {
                return fail("gen", format!("{a:?}"), format!("{b:?}"));
            }
        }
    }
    let a = scan::zcycle(s).map(|z| (z.name, z.quals, z.end));
    if a != zc_rx(s) {
        return fail("zcycle", format!("{a:?}"), format!("{:?}", zc_rx(s)));
    }
    let (a, b) = (scan::zgen_end(s), r.zgen_end.captures(s).map(|c| (g(&c, "name").unwrap(), g(&c, "hb").unwrap(), g(&c, "ha").unwrap())));
    if a != b {
        return fail("zgen", format!("{a:?}"), format!("{b:?}"));
    }
    let (a, b) = (scan::safepoint(s), p.safepoint.captures(s).map(|c| (g(&c, "op").unwrap(), g(&c, "reach").unwrap(), g(&c, "total").unwrap())));
    if a != b {
        return fail("safepoint", format!("{a:?}"), format!("{b:?}"));
    }
    let (a, b) = (scan::stall(s), p.stall.captures(s).map(|c| g(&c, "dur").unwrap()));
    if a != b {
        return fail("stall", format!("{a:?}"), format!("{b:?}"));
    }
    Ok(())
}

const SAMPLES: &[&str] = &[
    "Pause Young (Normal) (G1 Evacuation Pause) 24M->3M(64M) 3.544ms",
    "Pause Young (Mixed) (G1 Evacuation Pause)",
    "Pause Full (System.gc()) 10M(12M)->2M(64M) 12.5ms",
    "Pause Remark 30M->30M(64M) 1,234ms ",
    "Pause Mark Start 0.012ms",
    "Pause Init Mark (unload classes) 0.3 us",
    "Concurrent Mark Cycle 12.3ms",
    "Concurrent Scan Root Regions",
    "Concurrent Cleanup 24 M->20 M(64 M) 0.5s",
    "User=0.01s Sys=0.00s Real=0.01s",
    "Eden regions: 24->0(30)",
    "Humongous regions: 3->3",
    "Metaspace: 1097K(1216K)->1097K(1216K) NonClass: 987K(1024K)->987K(1024K)",
    "PSYoungGen:  1024K->512K(2048K)",
    "Minor Collection (Allocation Rate) 24M(20%)->10M(8%) 0.045s",
    "Major Collection (Proactive) (System.gc()) 24M(20%)->10M(8%)",
    "Garbage Collection (Warmup)",
    "Young Generation 24M(20%)->10M(8%) 0.031s",
    "Old Generation (Promote) 1M(1%)->2M(2%)",
    "Safepoint \"G1CollectForAllocation\", Time since last: 123 ns, Reaching safepoint: 45 ns, Cleanup: 1 ns, At safepoint: 9 ns, Total: 55 ns",
    "Safepoint \"X\", Time since last: 1 ns, Reaching safepoint: 2 ns, Total: 3 ns, Leaving safepoint: 4 ns, Total: 5 ns",
    "Allocation Stall (main (x)) 12.5ms",
    "Relocation Stall (t) 3 ms  ",
];

/// The message part of every unified corpus line: after `GC(n) ` and an optional `y: `, or
/// after the decorators.
fn corpus_messages() -> Vec<String> {
    let mut out = Vec::new();
    for text in common::corpus_texts("") {
        for line in text.lines() {
            let msg = line.rsplit("] ").next().unwrap_or(line);
            let msg = match msg.find(") ") {
                Some(i) if msg.starts_with("GC(") => &msg[i + 2..],
                _ => msg,
            };
            let msg = msg.get(3..).filter(|_| msg.as_bytes().get(1..3) == Some(b": ")).unwrap_or(msg);
            out.push(msg.to_string());
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn samples_and_corpus_agree() {
    let msgs = corpus_messages();
    for m in SAMPLES.iter().map(|s| s.to_string()).chain(msgs.iter().cloned()) {
        check(&m).unwrap();
    }
    // not vacuous: the corpus has lines of each kind (distinct messages)
    let n = |f: &dyn Fn(&str) -> bool| msgs.iter().filter(|m| f(m)).count();
    assert!(n(&|m| scan::gc_end(m, "Pause ").is_some()) > 5);
    assert!(n(&|m| scan::gc_start(m, "Concurrent ").is_some()) > 5);
    assert!(n(&|m| scan::safepoint(m).is_some()) > 5);
    assert!(n(&|m| scan::zcycle(m).map_or(false, |z| z.end.is_some())) > 5);
}

fn mutate(base: &str, at: usize, cut: usize, ins: &str) -> String {
    let b: Vec<char> = base.chars().collect();
    let at = at % (b.len() + 1);
    let end = (at + cut).min(b.len());
    b[..at].iter().chain(ins.chars().collect::<Vec<_>>().iter()).chain(b[end..].iter()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(30000))]
    #[test]
    fn mutations_agree(i in 0..SAMPLES.len(), at in 0usize..160, cut in 0usize..4,
                       ins in "[0-9 .,:()\\-%>BKMGTmsuna-zA-Z\"_\t\x0b\x1c]{0,4}") {
        let l = mutate(SAMPLES[i], at, cut, &ins);
        prop_assert!(check(&l).is_ok(), "{}", check(&l).unwrap_err());
    }
}
