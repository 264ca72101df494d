//! The unified `GC(n)` message patterns, and reading a message with them: by its hand-written
//! scanner (unified_scan.rs) on plain ASCII text, by the regex on any other haystack.

use crate::pyfns::{num, rstrip, size_kb, Kb};
use crate::rx::{py, py_m, Re};
use crate::unified_scan::{self as scan, plain, GcEnd, GcStart, ZCycle};
use std::sync::OnceLock;

/// The `GC(n)` message patterns (public for the scanner tests).
pub struct GcRes {
    pub pause_end: Re,
    pub pause_start: Re,
    pub conc_end: Re,
    pub conc_start: Re,
    pub zcycle_end: Re,
    pub zcycle_start: Re,
    pub zgen_end: Re,
    pub cpu: Re,
    pub gen: Re,
    pub regions: Re,
    pub quals: Re,
    pub gc_detail: Re,
}

const Q: &str = r"\((?:[^()]|\([^()]*\))*\)";
const SIZE: &str = r"\d+(?:[.,]\d+)?\s?[BKMGT]";

pub fn res() -> &'static GcRes {
    static R: OnceLock<GcRes> = OnceLock::new();
    R.get_or_init(|| {
        let heap = format!(r"(?P<hb>{SIZE})(?:\((?P<hcb>{SIZE})\))?->(?P<ha>{SIZE})\((?P<hc>{SIZE})\)");
        let dur = r"(?P<dur>\d+(?:[.,]\d+)?) ?(?P<unit>ms|s|us)";
        let name = r"(?P<name>[A-Za-z][A-Za-z0-9\-]*(?: [A-Za-z][A-Za-z0-9\-]*)*?)";
        let zsize = |g: &str| format!(r"(?P<{g}>{SIZE})\(\d+%\)");
        GcRes {
            pause_end: py_m(&format!(r"Pause {name}(?P<quals>(?: {Q})*)(?: {heap})? {dur}\s*$")),
            pause_start: py_m(&format!(r"Pause {name}(?P<quals>(?: {Q})*)\s*$")),
            conc_end: py_m(&format!(r"Concurrent {name}(?P<quals>(?: {Q})*)(?: {heap})? {dur}\s*$")),
            conc_start: py_m(&format!(r"Concurrent {name}(?P<quals>(?: {Q})*)\s*$")),
            zcycle_end: py_m(&format!(
                r"(?P<name>Garbage|Major|Minor) Collection (?P<quals>(?:{Q} ?)+)\s*{}->{}(?: (?P<dur>\d+(?:[.,]\d+)?)s)?\s*$",
                zsize("hb"),
                zsize("ha")
            )),
            zcycle_start: py_m(&format!(r"(?P<name>Garbage|Major|Minor) Collection (?P<quals>(?:{Q} ?)+)\s*$")),
            zgen_end: py_m(&format!(
                r"(?P<name>Young|Old) Generation(?: {Q})*\s*{}->{}(?: (?P<dur>\d+(?:[.,]\d+)?)s)?\s*$",
                zsize("hb"),
                zsize("ha")
            )),
            cpu: py_m(r"User=(\d+(?:[.,]\d+)?)s Sys=(\d+(?:[.,]\d+)?)s Real=(\d+(?:[.,]\d+)?)s"),
            gen: py_m(&format!(
                r"(?P<gen>DefNew|Tenured|PSYoungGen|ParOldGen|PSOldGen|ParNew|CMS|Metaspace|Class Space|Perm):\s+(?P<b>{SIZE})(?:\((?P<cb>{SIZE})\))?->(?P<a>{SIZE})\((?P<c>{SIZE})\)"
            )),
            regions: py_m(r"(?P<kind>Eden|Survivor|Old|Humongous|Archive) regions: (?P<b>\d+)->(?P<a>\d+)"),
            quals: py(r"\(((?:[^()]|\([^()]*\))*)\)"),
            gc_detail: crate::rx::spec(crate::vocab::GC_DETAIL, &[], true),
        }
    })
}

/// A size the patterns matched (they admit only valid numbers).
pub fn kb(text: &str) -> Kb {
    size_kb(text).unwrap_or(Kb::Small(0))
}

/// before, after, committed of an end line's heap sizes
pub fn heap3(e: &GcEnd) -> Option<[Kb; 3]> {
    let (_, hb, ha, hc) = e.heap?;
    Some([kb(hb), kb(ha), kb(hc)])
}

/// pause_end / conc_end (`prefix`: "Pause " / "Concurrent "); an end line ends in its
/// duration's unit, so only a message ending in 's' is tried.
pub fn end_of<'a>(rest: &'a str, prefix: &str, re: &Re) -> Option<GcEnd<'a>> {
    if !rstrip(rest).ends_with('s') {
        return None;
    }
    if plain(rest) {
        return scan::gc_end(rest, prefix);
    }
    let c = re.captures(rest)?;
    let g = |n: &str| c.name(n).map(|m| m.as_str());
    let dur = c.name("dur").unwrap();
    Some(GcEnd {
        name: g("name").unwrap(),
        quals: g("quals").unwrap_or(""),
        heap: c.name("hb").map(|m| (m.start(), m.as_str(), g("ha").unwrap(), g("hc").unwrap())),
        dur_start: dur.start(),
        dur: dur.as_str(),
        unit: g("unit").unwrap(),
    })
}

/// pause_start / conc_start
pub fn start_of<'a>(rest: &'a str, prefix: &str, re: &Re) -> Option<GcStart<'a>> {
    if plain(rest) {
        return scan::gc_start(rest, prefix);
    }
    let c = re.captures(rest)?;
    let g = |n: &str| c.name(n).map(|m| m.as_str());
    Some(GcStart { name: g("name").unwrap(), quals: g("quals").unwrap_or("") })
}

/// zcycle_end, else zcycle_start
pub fn zcycle_of(rest: &str) -> Option<ZCycle<'_>> {
    if plain(rest) {
        return scan::zcycle(rest);
    }
    let r = res();
    if let Some(c) = r.zcycle_end.captures(rest) {
        let g = |n: &str| c.name(n).map(|m| m.as_str());
        let hb = c.name("hb").unwrap();
        let end = Some((hb.start(), hb.as_str(), g("ha").unwrap(), g("dur")));
        return Some(ZCycle { name: g("name").unwrap(), quals: g("quals").unwrap_or(""), end });
    }
    let c = r.zcycle_start.captures(rest)?;
    let g = |n: &str| c.name(n).map(|m| m.as_str());
    Some(ZCycle { name: g("name").unwrap(), quals: g("quals").unwrap_or(""), end: None })
}

/// Three named groups of the match of `re`.
fn groups3<'a>(re: &Re, rest: &'a str, names: [&str; 3]) -> Option<(&'a str, &'a str, &'a str)> {
    let c = re.captures(rest)?;
    let [a, b, d] = names.map(|n| c.name(n).unwrap().as_str());
    Some((a, b, d))
}

/// zgen_end: (Young|Old, heap before, heap after)
pub fn zgen_of(rest: &str) -> Option<(&str, &str, &str)> {
    if plain(rest) {
        return scan::zgen_end(rest);
    }
    groups3(&res().zgen_end, rest, ["name", "hb", "ha"])
}

/// cpu: (user, sys, real)
pub fn cpu_of(rest: &str) -> Option<(&str, &str, &str)> {
    if plain(rest) {
        return scan::cpu(rest);
    }
    let c = res().cpu.captures(rest)?;
    let g = |i: usize| c.get(i).unwrap().as_str();
    Some((g(1), g(2), g(3)))
}

/// gen: (generation, before, after, committed) of a line labelled `key`
pub fn gen_of<'a>(rest: &'a str, key: &'a str) -> Option<(&'a str, &'a str, &'a str, &'a str)> {
    if plain(rest) {
        return scan::gen_sizes(rest, key).map(|(b, a, c)| (key, b, a, c));
    }
    res().gen.captures(rest).map(|c| {
        let g = |n: &str| c.name(n).unwrap().as_str();
        (g("gen"), g("b"), g("a"), g("c"))
    })
}

/// regions: (kind, before, after)
pub fn regions_of(rest: &str) -> Option<(&str, &str, &str)> {
    if plain(rest) {
        return scan::regions(rest);
    }
    groups3(&res().regions, rest, ["kind", "b", "a"])
}

/// A duration in milliseconds.
pub fn dur_ms(value: &str, unit: &str) -> f64 {
    let v = num(value);
    match unit {
        "s" => v * 1000.0,
        "us" => v / 1000.0,
        _ => v,
    }
}

/// the qualifiers' inner texts (the group holds whole qualifiers only: scanning it gives what
/// the `quals` regex finds)
pub fn quals(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    scan::split_quals(text)
}
