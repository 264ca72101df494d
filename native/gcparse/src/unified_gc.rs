//! Unified `GC(n)` lines: pauses, concurrent phases, ZGC and Shenandoah cycles
//! (`UnifiedHandler._gc_line` and what it calls).

use crate::out::Out;
use crate::core::{Owner, EVENT, UNKNOWN};
use crate::event::Event;
use crate::pyfns::{is_alpha, num, rstrip, size_kb, slug, strip, Kb, PyInt};
use crate::rx::{py, py_m};
use crate::ts::{elapsed_ms, Ts};
use crate::unified::{Deco, Phase, Unified};
use crate::unified_scan::{self as scan, plain, GcEnd, GcStart};
use crate::rx::Re;
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

const GEN_KEYS: [&str; 9] = ["DefNew", "Tenured", "PSYoungGen", "ParOldGen", "PSOldGen", "ParNew", "CMS", "Metaspace", "Perm"];
const ZGC_SUBPHASES: [&str; 18] = [
    "Mark Roots", "Mark Follow", "Relocate Remset FP", "References Process", "References Enqueue",
    "Classes Unlink", "Classes Purge", "Mark Root Colored", "Mark Root Uncolored",
    "Roots OopStorageSet", "Weak Roots OopStorageSet", "Roots ClassLoaderDataGraph",
    "Roots CodeCache", "Roots JavaThreads", "Remap Roots Colored", "Remap Roots Uncolored",
    "Remap Remembered", "Mark Continue",
];

fn gen_hint(g: &str) -> Option<&'static str> {
    Some(match g {
        "DefNew" | "Tenured" => "serial",
        "PSYoungGen" | "ParOldGen" | "PSOldGen" => "parallel",
        "ParNew" | "CMS" => "cms",
        _ => return None,
    })
}

fn kb(text: &str) -> Kb {
    // the patterns admit only valid numbers here
    size_kb(text).unwrap_or(Kb::Small(0))
}

fn heap3(e: &GcEnd) -> Option<[Kb; 3]> {
    let (_, hb, ha, hc) = e.heap?;
    Some([kb(hb), kb(ha), kb(hc)])
}

/// pause_end / conc_end: scanned, or by the regex on other haystacks.
fn end_of<'a>(rest: &'a str, prefix: &str, re: &Re) -> Option<GcEnd<'a>> {
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

/// pause_start / conc_start: scanned, or by the regex on other haystacks.
fn start_of<'a>(rest: &'a str, prefix: &str, re: &Re) -> Option<GcStart<'a>> {
    if plain(rest) {
        return scan::gc_start(rest, prefix);
    }
    let c = re.captures(rest)?;
    let g = |n: &str| c.name(n).map(|m| m.as_str());
    Some(GcStart { name: g("name").unwrap(), quals: g("quals").unwrap_or("") })
}

fn dur_ms(value: &str, unit: &str) -> f64 {
    let v = num(value);
    match unit {
        "s" => v * 1000.0,
        "us" => v / 1000.0,
        _ => v,
    }
}

/// the qualifiers' inner texts (the group holds whole qualifiers only: scanning it gives what
/// the `quals` regex finds)
fn quals(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    scan::split_quals(text)
}

/// rest.rstrip()[-1:] == "s"
fn ends_with_s(rest: &str) -> bool {
    rstrip(rest).ends_with('s')
}

fn with_gen(gen: Option<char>, phase: &str) -> String {
    match gen {
        Some(g) => format!("{g}: {phase}"),
        None => phase.to_string(),
    }
}

impl Unified {
    pub fn gc_line(
        &mut self, o: &mut Owner, gc_id: PyInt, rest: &str, d: Option<&Deco>, line_no: u64, out: &mut Out,
        raw: &str,
    ) -> u8 {
        if rest.is_empty() || rest.starts_with(' ') {
            return EVENT; // indented detail lines
        }
        let mut rest = rest;
        let mut gen = None;
        let c = rest.chars().next().unwrap();
        if (c == 'Y' || c == 'y' || c == 'O') && rest[1..].starts_with(": ") {
            gen = Some(c);
            rest = &rest[3..];
            if rest.is_empty() || rest.starts_with(' ') {
                return EVENT;
            }
        }
        let c0 = rest.chars().next().unwrap();
        let r = res();
        if c0 == 'P' && rest.starts_with("Pause ") {
            return self.pause(o, gc_id, rest, gen, d, line_no, out, raw);
        }
        if c0 == 'C' && rest.starts_with("Concurrent ") {
            return self.concurrent(o, gc_id, rest, gen, d, line_no, out, raw);
        }
        if c0 == 'C' && rest.starts_with("Coalescing and filling") {
            let text = format!("Concurrent {rest}");
            return self.concurrent(o, gc_id, &text, gen, d, line_no, out, raw);
        }
        if c0 == 'U' && rest.starts_with("User=") {
            let cm = if plain(rest) {
                scan::cpu(rest)
            } else {
                r.cpu.captures(rest).map(|c| (c.get(1).unwrap().as_str(), c.get(2).unwrap().as_str(), c.get(3).unwrap().as_str()))
            };
            let Some((u, sy, re)) = cm else { return UNKNOWN };
            if let Some(t) = self.ready.iter_mut().rev().find(|e| e.gc_id.as_ref() == Some(&gc_id)) {
                if t.user_s.is_none() {
                    t.user_s = Some(num(u));
                    t.sys_s = Some(num(sy));
                    t.real_s = Some(num(re));
                }
            }
            self.flush_ready(out);
            return EVENT;
        }
        if gen.is_none()
            && (rest.starts_with("Garbage Collection") || rest.starts_with("Major Collection") || rest.starts_with("Minor Collection"))
        {
            return self.zcycle(o, gc_id, rest, d, line_no, out, raw);
        }
        if gen.is_some() && (rest.starts_with("Young Generation") || rest.starts_with("Old Generation")) {
            let i = self.state(o, &gc_id, line_no, d.map(|d| d.ts()));
            let zm = if plain(rest) {
                scan::zgen_end(rest)
            } else {
                r.zgen_end.captures(rest).map(|c| {
                    let g = |n: &str| c.name(n).unwrap().as_str();
                    (g("name"), g("hb"), g("ha"))
                })
            };
            if let Some((zname, hb, ha)) = zm {
                let v = (kb(hb), kb(ha));
                if zname == "Young" {
                    self.states[i].zgen_young = Some(v);
                } else {
                    self.states[i].zgen_old = Some(v);
                }
            }
            o.set_collector_unified(Some("zgc-generational"));
            return EVENT;
        }
        if (c0 == 'A' && rest.starts_with("Allocation Stall (")) || (c0 == 'R' && rest.starts_with("Relocation Stall (")) {
            return self.plain_line(o, rest, d, line_no, out, raw);
        }
        if let Some(colon) = rest.find(':') {
            let nchars = if rest.is_ascii() { colon } else { rest[..colon].chars().count() };
            if 0 < nchars && nchars < 24 {
                if let Some(code) = self.label_line(o, &gc_id, rest, colon, c0, d, line_no) {
                    return code;
                }
            }
        }
        if c0 == 'P' && rest.starts_with("Promotion failed") {
            let i = self.get_or_state(o, &gc_id, line_no, d);
            if !self.states[i].flags.contains(&"promotion-failed") {
                self.states[i].flags.push("promotion-failed");
            }
            return EVENT;
        }
        if c0 == 'T' && rest.starts_with("To-space exhausted") {
            let i = self.get_or_state(o, &gc_id, line_no, d);
            if !self.states[i].flags.contains(&"to-space-exhausted") {
                self.states[i].flags.push("to-space-exhausted");
            }
            return EVENT;
        }
        if r.gc_detail.is_match(rest) {
            return EVENT;
        }
        UNKNOWN
    }

    /// 'Label: ...' lines of a GC id: generation sizes, G1 regions, Shenandoah cancellation.
    fn label_line(
        &mut self, o: &mut Owner, gc_id: &PyInt, rest: &str, colon: usize, c0: char, d: Option<&Deco>, line_no: u64,
    ) -> Option<u8> {
        let r = res();
        let key = &rest[..colon];
        if GEN_KEYS.contains(&key) {
            let gm = if plain(rest) {
                scan::gen_sizes(rest, key).map(|(b, a, c)| (key, b, a, c))
            } else {
                r.gen.captures(rest).map(|c| {
                    let g = |n: &str| c.name(n).unwrap().as_str();
                    (g("gen"), g("b"), g("a"), g("c"))
                })
            };
            if let Some((g, b, a, c)) = gm {
                let i = self.get_or_state(o, gc_id, line_no, d);
                let vals = [kb(b), kb(a), kb(c)];
                if let Some(h) = gen_hint(g) {
                    o.set_collector_unified(Some(h));
                }
                let st = &mut self.states[i];
                match g {
                    "DefNew" | "PSYoungGen" | "ParNew" => st.young = Some(vals),
                    "Tenured" | "ParOldGen" | "PSOldGen" | "CMS" => st.old = Some(vals),
                    _ => st.meta = Some(vals),
                }
            }
            return Some(EVENT);
        }
        if key.ends_with(" regions") {
            let rm = if plain(rest) {
                scan::regions(rest)
            } else {
                r.regions.captures(rest).map(|c| {
                    let g = |n: &str| c.name(n).unwrap().as_str();
                    (g("kind"), g("b"), g("a"))
                })
            };
            if let Some((kind, b, a)) = rm {
                let i = self.get_or_state(o, gc_id, line_no, d);
                let (b, a) = (PyInt::parse(b).unwrap(), PyInt::parse(a).unwrap());
                let regions = self.states[i].regions.get_or_insert_with(Vec::new);
                match regions.iter_mut().find(|(k, _, _)| &**k == kind) {
                    Some(e) => {
                        e.1 = b;
                        e.2 = a;
                    }
                    None => regions.push((kind.into(), b, a)),
                }
                o.set_collector_unified(Some("g1"));
            }
            return Some(EVENT);
        }
        if key == "Cancelling GC" {
            let i = self.get_or_state(o, gc_id, line_no, d);
            let st = &mut self.states[i];
            st.cycle_flags.push("cancelled");
            if rest.contains("Upgrade To Full") {
                st.cycle_flags.push("upgrade-to-full");
                if st.pause_line != 0 {
                    st.flags.push("upgrade-to-full");
                }
            }
            return Some(EVENT);
        }
        let next = &rest[colon + 1..];
        if (next.is_empty() || next.starts_with(' ')) && is_alpha(c0) {
            return Some(EVENT); // 'Label: value' detail line
        }
        None
    }

    // -- pauses ------------------------------------------------------------------------------

    fn pause(
        &mut self, o: &mut Owner, gc_id: PyInt, rest: &str, gen: Option<char>, d: Option<&Deco>, line_no: u64,
        out: &mut Out, raw: &str,
    ) -> u8 {
        let r = res();
        let em = if ends_with_s(rest) { end_of(rest, "Pause ", &r.pause_end) } else { None };
        let ts = d.map(|d| d.ts());
        let Some(em) = em else {
            if start_of(rest, "Pause ", &r.pause_start).is_none() {
                return UNKNOWN;
            }
            self.flush_ready(out);
            let i = self.state(o, &gc_id, line_no, ts.clone());
            let st = &mut self.states[i];
            if st.pause_line != 0 {
                o.stats.incomplete_events += 1; // previous pause of this id never finished
            }
            st.reset_pause();
            st.pause_line = line_no;
            st.pause_ts = ts.clone();
            st.pause_raw = if o.keep_raw { Some(raw.into()) } else { None };
            if &*o.collector == "shenandoah" {
                self.shen_track(o, &gc_id, strip(rest), None, ts.as_ref(), false);
            }
            return EVENT;
        };
        self.flush_ready(out);
        let i = self.get_or_state(o, &gc_id, line_no, d);
        let name = em.name;
        let qs = quals(em.quals);
        let dur = dur_ms(em.dur, em.unit);
        let st = &self.states[i];
        let mut flags: Vec<&'static str> = st.flags.clone();
        let mut cause: Option<&str> = None;
        let mut hint: Option<&'static str> = None;
        let mut etype: Option<String> = None;
        for &q in &qs {
            match q {
                "Normal" | "Concurrent Start" | "Prepare Mixed" | "Mixed" => {
                    hint = Some("g1");
                    match q {
                        "Mixed" => etype = Some("mixed".into()),
                        "Concurrent Start" => flags.push("concurrent-start"),
                        "Prepare Mixed" => flags.push("prepare-mixed"),
                        _ => {}
                    }
                }
                "Evacuation Failure" => flags.push("evacuation-failure"),
                "Major" | "Minor" => {}
                _ if cause.is_none() => cause = Some(q),
                _ => {}
            }
        }
        let etype: String = match name {
            "Young" => etype.unwrap_or_else(|| "young".into()),
            "Full" => "full".into(),
            "Mixed" => {
                hint = Some("g1");
                "mixed".into()
            }
            "Initial Mark" => {
                if &*o.collector == "cms" {
                    "initial-mark".into()
                } else {
                    // G1 (JDK 9/10): a young pause that starts concurrent marking
                    hint = Some("g1");
                    flags.push("concurrent-start");
                    "young".into()
                }
            }
            "Remark" => "remark".into(),
            "Cleanup" => {
                hint = Some("g1");
                "cleanup".into()
            }
            "Degenerated GC" => {
                hint = Some("shenandoah");
                "degenerated".into()
            }
            _ => {
                hint = Some(if matches!(name, "Mark Start" | "Mark End" | "Relocate Start") {
                    if gen.is_some() { "zgc-generational" } else { "zgc" }
                } else {
                    "shenandoah"
                });
                // Shenandoah qualifiers like '(unload classes)', '(Global)' are not causes
                if hint == Some("shenandoah") {
                    cause = None;
                }
                format!("pause-{}", slug(name))
            }
        };
        if let Some(c) = cause {
            if c.contains("Humongous") {
                flags.push("humongous");
            }
            if c == "System.gc()" || c == "System" {
                flags.push("system-gc");
            }
            if hint.is_none() && c.starts_with("G1 ") {
                hint = Some("g1");
            }
        }
        let cut = em.heap.map_or(em.dur_start, |h| h.0);
        let phase = with_gen(gen, rstrip(&rest[..cut]));
        let (first_ts, first_line, first_raw) = if st.pause_line != 0 {
            (st.pause_ts.clone(), st.pause_line, st.pause_raw.clone())
        } else {
            (ts.clone(), line_no, Some(raw.into()))
        };
        let mut ev = self.new_event(o, &etype, first_ts.as_ref(), first_line, first_raw.as_deref(), hint);
        ev.cause = cause.map(Into::into);
        ev.pause_ms = Some(dur);
        ev.duration_ms = Some(dur);
        ev.gc_id = Some(gc_id.clone());
        ev.phase = Some(phase.as_str().into());
        if let Some([b, a, c]) = heap3(&em) {
            ev.heap = [Some(b), Some(a), Some(c)];
        }
        let st = &self.states[i];
        if let Some(v) = &st.young {
            ev.young = v.clone().map(Some);
        }
        if let Some(v) = &st.old {
            ev.old = v.clone().map(Some);
        }
        if let Some(v) = &st.meta {
            ev.meta = v.clone().map(Some);
        }
        if let (Some(regions), Some(rk)) = (&st.regions, &self.region_kb) {
            if !regions.is_empty() && rk.truthy() {
                let get = |k: &str| {
                    regions
                        .iter()
                        .find(|(n, _, _)| &**n == k)
                        .map_or((Kb::Small(0), Kb::Small(0)), |(_, b, a)| (Kb::from_int(b), Kb::from_int(a)))
                };
                let (eb, ea) = get("Eden");
                let (sb, sa) = get("Survivor");
                let (ob, oa) = get("Old");
                let (hb, ha) = get("Humongous");
                let (ab, aa) = get("Archive");
                ev.young[0] = Some(Kb::mul(&Kb::add(&eb, &sb), rk));
                ev.young[1] = Some(Kb::mul(&Kb::add(&ea, &sa), rk));
                ev.old[0] = Some(Kb::mul(&Kb::add(&Kb::add(&ob, &hb), &ab), rk));
                ev.old[1] = Some(Kb::mul(&Kb::add(&Kb::add(&oa, &ha), &aa), rk));
            }
        }
        ev.set_flags(&flags);
        self.states[i].reset_pause();
        // A pause that runs inside another one (young collection turning into a full one,
        // CMS remark with CMSScavengeBeforeRemark) is logged with its own GC id between the
        // start and end lines of the enclosing pause: the enclosing pause absorbs it.
        let mut outer = None;
        for j in 0..self.states.len() {
            let s2 = &self.states[j];
            if s2.gc_id.0 != gc_id && s2.pause_line != 0 {
                let delta = first_line as i128 - s2.pause_line as i128;
                if (0..=200).contains(&delta) {
                    let dd = elapsed_ms(s2.pause_ts.as_ref(), first_ts.as_ref(), o.date_hook.as_ref());
                    if dd.map_or(false, |x| x > 1000.0) {
                        // a start line whose pause never ended (e.g. cut by log rotation)
                        o.stats.incomplete_events += 1;
                        self.states[j].reset_pause();
                        continue;
                    }
                    outer = Some(j);
                }
            }
        }
        if let Some(j) = outer {
            self.states[j].nested.push(ev);
            return EVENT;
        }
        if !self.states[i].nested.is_empty() {
            let inner = std::mem::take(&mut self.states[i].nested);
            absorb(&mut ev, &inner);
        }
        self.ready.push(ev);
        if &*o.collector == "shenandoah" {
            self.shen_track(o, &gc_id, &phase, Some(&em), ts.as_ref(), false);
        } else {
            self.maybe_forget(i);
        }
        EVENT
    }

    // -- concurrent phases -------------------------------------------------------------------

    fn concurrent(
        &mut self, o: &mut Owner, gc_id: PyInt, rest: &str, gen: Option<char>, d: Option<&Deco>, line_no: u64,
        out: &mut Out, raw: &str,
    ) -> u8 {
        let r = res();
        let em = if ends_with_s(rest) { end_of(rest, "Concurrent ", &r.conc_end) } else { None };
        let ts = d.map(|d| d.ts());
        let level = d.and_then(|d| d.level());
        let Some(em) = em else {
            let Some(sm) = start_of(rest, "Concurrent ", &r.conc_start) else {
                return if r.gc_detail.is_match(rest) { EVENT } else { UNKNOWN };
            };
            self.flush_ready(out);
            let i = self.state(o, &gc_id, line_no, ts.clone());
            let name = sm.name;
            if matches!(name, "Cycle" | "Mark Cycle" | "Undo Cycle") {
                let keep = if o.keep_raw { Some(raw.into()) } else { None };
                self.states[i].cycle = Some((ts, line_no, keep));
                o.set_collector_unified(Some("g1"));
                return EVENT;
            }
            if name == "Mark Abort" {
                self.mark_abort(o, i, &gc_id, ts.as_ref());
                return EVENT;
            }
            let keep = if o.keep_raw { Some(raw.into()) } else { None };
            self.states[i].phases.push(Phase { name: name.into(), ts: ts.clone(), line: line_no, raw: keep });
            if &*o.collector == "shenandoah" {
                self.shen_track(o, &gc_id, strip(rest), None, ts.as_ref(), true);
            }
            return EVENT;
        };
        self.flush_ready(out);
        let i = self.get_or_state(o, &gc_id, line_no, d);
        let name = em.name;
        let dur = dur_ms(em.dur, em.unit);
        if matches!(name, "Cycle" | "Mark Cycle" | "Undo Cycle") {
            let st = &mut self.states[i];
            let cyc = st.cycle.take();
            let mut flags = st.cycle_flags.clone();
            if name == "Undo Cycle" {
                flags.push("undo");
            }
            let (cts, cline, craw) = match cyc {
                Some((t, l, r)) => (t, l, r),
                None => (ts.clone(), line_no, Some(raw.into())),
            };
            let mut ev = self.new_event(o, "concurrent-cycle", cts.as_ref(), cline, craw.as_deref(), Some("g1"));
            ev.duration_ms = Some(dur);
            ev.gc_id = Some(gc_id.clone());
            ev.phase = Some(format!("Concurrent {name}").into());
            ev.set_flags(&flags);
            let st = &mut self.states[i];
            st.cycle_flags.clear();
            st.phases.clear();
            self.ready.push(ev);
            self.maybe_forget(i);
            return EVENT;
        }
        // match the open start line of this phase (if any)
        let st = &mut self.states[i];
        let start = st.phases.iter().rposition(|p| &*p.name == name).map(|k| st.phases.remove(k));
        let mut nested = !st.phases.is_empty(); // another phase of this GC id is still open
        if let Some(l) = level {
            if matches!(strip(l), "debug" | "trace") {
                nested = true;
            }
        } else if !self.has_level && ZGC_SUBPHASES.contains(&name) {
            nested = true;
        }
        if &*o.collector == "shenandoah" {
            self.shen_track(o, &gc_id, strip(rest), Some(&em), ts.as_ref(), true);
        }
        if nested {
            return EVENT;
        }
        let cut = em.heap.map_or(em.dur_start, |h| h.0);
        let phase = with_gen(gen, rstrip(&rest[..cut]));
        let hint = if gen.is_some() { Some("zgc-generational") } else { None };
        let (sts, sline, sraw) = match start {
            Some(p) => (p.ts, p.line, p.raw),
            None => (ts.clone(), line_no, Some(raw.into())),
        };
        let etype = format!("concurrent-{}", slug(name));
        let mut ev = self.new_event(o, &etype, sts.as_ref(), sline, sraw.as_deref(), hint);
        ev.concurrent_ms = Some(dur);
        ev.duration_ms = Some(dur);
        ev.gc_id = Some(gc_id);
        ev.phase = Some(phase.into());
        if let Some([b, a, c]) = heap3(&em) {
            ev.heap = [Some(b), Some(a), Some(c)];
        }
        self.ready.push(ev);
        EVENT
    }

    /// G1 aborts marking (e.g. for a full GC): the open 'Concurrent Mark' never logs its end;
    /// it is emitted as aborted with the duration measured so far.
    fn mark_abort(&mut self, o: &mut Owner, i: usize, gc_id: &PyInt, ts: Option<&Ts>) {
        let st = &mut self.states[i];
        st.cycle_flags.push("aborted");
        let Some(k) = st.phases.iter().rposition(|p| &*p.name == "Mark") else { return };
        let start = st.phases.remove(k);
        st.phases.truncate(k); // its open sub-phases end with it
        let mut ev = self.new_event(o, "concurrent-mark", start.ts.as_ref(), start.line, start.raw.as_deref(), None);
        ev.gc_id = Some(gc_id.clone());
        ev.phase = Some("Concurrent Mark".into());
        ev.flags = vec!["aborted"];
        if let Some(dd) = elapsed_ms(start.ts.as_ref(), ts, o.date_hook.as_ref()) {
            ev.concurrent_ms = Some(dd);
            ev.duration_ms = Some(dd);
        }
        self.ready.push(ev);
    }

    // -- Shenandoah cycles (synthesised) -----------------------------------------------------

    /// Shenandoah logs no cycle summary: a cycle is all the GC(n) lines of one GC id.
    fn shen_track(
        &mut self, o: &mut Owner, gc_id: &PyInt, name: &str, em: Option<&GcEnd>, ts: Option<&Ts>, concurrent: bool,
    ) {
        if self.shen_open.as_ref() != Some(gc_id) {
            if let Some(open) = self.shen_open.clone() {
                self.close_shenandoah(o, &open);
            }
            self.shen_open = Some(gc_id.clone());
            let trig = self.trigger.take();
            if let Some(i) = self.find(gc_id) {
                self.states[i].trigger = trig;
            }
        }
        let Some(i) = self.find(gc_id) else { return };
        let st = &mut self.states[i];
        if st.shen_first_name.is_none() {
            st.shen_first_name = Some(name.into());
        }
        if concurrent {
            st.shen_has_conc = true;
        }
        if let Some(em) = em {
            if let Some((_, hb, ha, hc)) = em.heap {
                st.shen_heap = Some((hb.into(), ha.into(), hc.into()));
            }
        }
        if let Some(t) = ts {
            st.last_ts = Some(t.clone());
        }
    }

    pub fn close_shenandoah(&mut self, o: &mut Owner, gc_id: &PyInt) {
        self.shen_open = None;
        let Some(i) = self.find(gc_id) else { return };
        if self.states[i].shen_has_conc {
            let st = &self.states[i];
            let (fts, fline) = (st.first_ts.clone(), st.first_line);
            let (name, cause) = (st.shen_first_name.clone(), st.trigger.clone());
            let dd = elapsed_ms(st.first_ts.as_ref(), st.last_ts.as_ref(), o.date_hook.as_ref());
            let heap = st.shen_heap.clone();
            let flags = st.cycle_flags.clone();
            let mut ev = self.new_event(o, "concurrent-cycle", fts.as_ref(), fline, None, Some("shenandoah"));
            ev.gc_id = Some(gc_id.clone());
            ev.phase = name.map(Into::into);
            ev.cause = cause.map(Into::into);
            ev.duration_ms = dd;
            if let Some((b, a, c)) = heap {
                ev.heap = [Some(kb(&b)), Some(kb(&a)), Some(kb(&c))];
            }
            ev.set_flags(&flags);
            self.ready.push(ev);
        }
        let st = &mut self.states[i];
        st.shen_has_conc = false;
        st.shen_heap = None;
        st.shen_first_name = None;
        self.maybe_forget(i);
    }

    // -- ZGC cycles --------------------------------------------------------------------------

    fn zcycle(
        &mut self, o: &mut Owner, gc_id: PyInt, rest: &str, d: Option<&Deco>, line_no: u64, out: &mut Out,
        raw: &str,
    ) -> u8 {
        let ts = d.map(|d| d.ts());
        let zc = if plain(rest) { scan::zcycle(rest) } else { zcycle_by_regex(rest) };
        self.flush_ready(out);
        let Some(scan::ZCycle { name, quals: qtext, end }) = zc else { return UNKNOWN };
        let Some((hb_at, hb, ha, zdur)) = end else {
            let i = self.state(o, &gc_id, line_no, ts.clone());
            let keep = if o.keep_raw { Some(raw.into()) } else { None };
            self.states[i].cycle = Some((ts, line_no, keep));
            let h = if name != "Garbage" { "zgc-generational" } else { "zgc" };
            o.set_collector_unified(Some(h));
            return EVENT;
        };
        let i = self.get_or_state(o, &gc_id, line_no, d);
        let qs = quals(qtext);
        let hint = if name == "Garbage" { "zgc" } else { "zgc-generational" };
        let cyc = self.states[i].cycle.take();
        let (cts, cline, craw) = match &cyc {
            Some((t, l, r)) => (t.clone(), *l, r.clone()),
            None => (ts.clone(), line_no, Some(raw.into())),
        };
        let mut ev = self.new_event(o, "concurrent-cycle", cts.as_ref(), cline, craw.as_deref(), Some(hint));
        ev.gc_id = Some(gc_id);
        ev.cause = qs.first().map(|&q| q.into());
        ev.phase = Some(rstrip(&rest[..hb_at]).into());
        ev.heap[0] = Some(kb(hb));
        ev.heap[1] = Some(kb(ha));
        if let Some(dur) = zdur.filter(|m| !m.is_empty()) {
            ev.duration_ms = Some(num(dur) * 1000.0);
        } else if let Some((t, _, _)) = &cyc {
            ev.duration_ms = elapsed_ms(t.as_ref(), ts.as_ref(), o.date_hook.as_ref());
        }
        let st = &mut self.states[i];
        if let Some((b, a)) = st.zgen_young.take() {
            ev.young[0] = Some(b);
            ev.young[1] = Some(a);
        }
        if let Some((b, a)) = st.zgen_old.take() {
            ev.old[0] = Some(b);
            ev.old[1] = Some(a);
        }
        if qs.first() == Some(&"System.gc()") {
            ev.flags = vec!["system-gc"];
        }
        self.ready.push(ev);
        self.maybe_forget(i);
        EVENT
    }
}

/// zcycle_end, else zcycle_start, by the regexes (haystacks the scanner leaves to them).
fn zcycle_by_regex(rest: &str) -> Option<scan::ZCycle<'_>> {
    let r = res();
    if let Some(c) = r.zcycle_end.captures(rest) {
        let g = |n: &str| c.name(n).map(|m| m.as_str());
        let hb = c.name("hb").unwrap();
        let end = Some((hb.start(), hb.as_str(), g("ha").unwrap(), g("dur")));
        return Some(scan::ZCycle { name: g("name").unwrap(), quals: g("quals").unwrap_or(""), end });
    }
    let c = r.zcycle_start.captures(rest)?;
    let g = |n: &str| c.name(n).map(|m| m.as_str());
    Some(scan::ZCycle { name: g("name").unwrap(), quals: g("quals").unwrap_or(""), end: None })
}

/// `_absorb`: the enclosing pause takes the inner pauses' type upgrade, flags and sizes.
fn absorb(ev: &mut Event, inner: &[Event]) {
    let mut flags = ev.flags.clone();
    for n in inner {
        if &*n.event_type == "full" && &*ev.event_type != "full" {
            ev.event_type = "full".into();
            flags.push("upgrade-to-full");
        } else if &*n.event_type == "young" && &*ev.event_type == "remark" {
            flags.push("scavenge-before-remark");
        }
        for f in &n.flags {
            if !flags.contains(f) {
                flags.push(f);
            }
        }
        for (dst, src) in [(&mut ev.young, &n.young), (&mut ev.old, &n.old), (&mut ev.meta, &n.meta)] {
            for k in 0..3 {
                if dst[k].is_none() && src[k].is_some() {
                    dst[k] = src[k].clone();
                }
            }
        }
    }
    ev.set_flags(&flags);
}
