//! JDK <= 8 handler (`_legacy.LegacyHandler`): line dispatch, embedded items, detail lines
//! and the fast paths.  Records (multi-line, nested brackets) are in legacy_record.rs.

use crate::core::{Owner, DEFERRED, EVENT, IGNORED, UNKNOWN};
use crate::event::Event;
use crate::fastnum::parse_f64;
use crate::legacy_res::{record_start, res, top_start};
use crate::pyfns::{first_is_digit, lstrip, num, rstrip_nl, size_kb, slug, strip, Kb, PyInt};
use crate::ts::wall_of_date;
use crate::unified::STOPPED_PHASE;
use crate::legacy_fast::{scan_young, Young};
use crate::rx::Re;
use regex::Captures;
use std::collections::HashMap;

/// A line of an open record: its text, or ignored (None in Python), or not counted (False).
#[derive(Clone, Debug)]
pub enum RecLine {
    Text(String),
    Ignored,
    NotCounted,
}

pub struct Record {
    pub pieces: Vec<String>,
    pub depth: i64,
    pub lines: Vec<(u64, RecLine)>,
    pub first_line: u64,
    pub raw: String,
}

/// (date, uptime) of a legacy prefix
pub type Prefix = (Option<String>, Option<String>);

#[derive(Default)]
pub struct Legacy {
    pub rec: Option<Record>,
    pub last: Option<Event>,
    pub detail_depth: i64,
    pub heap_block: bool,
    pub stats_block: bool,
    pub conc_starts: HashMap<String, (Option<String>, Option<String>, u64)>,
    pub saw_cms: bool,
    pub saw_g1: bool,
    pub cms_next_remark: bool,
    pub first_prefix: Option<Prefix>,
    pub last_prefix: Option<Prefix>,
    detail_labels: HashMap<String, bool>,
    fast_causes: HashMap<String, Option<(String, Vec<&'static str>)>>,
}

const DETAIL_MARKERS: [&str; 14] = [
    "concurrent-", "G1Ergonomics", "Total time for which", "Application time:", "AdaptiveSize",
    "abort preclean", " GC:", "TLAB", "[Preclean ", "GC invocations=", "Eden:", "Metaspace:",
    "Perm:", "[Times:",
];
const G1_TYPES: [&str; 6] = ["young", "mixed", "partial", "initial-mark", "to-space exhausted", "to-space overflow"];

pub fn gen_collector(name: &str) -> Option<&'static str> {
    Some(match name {
        "DefNew" | "Tenured" => "serial",
        "ParNew" | "CMS" | "ASParNew" | "ASCMS" => "cms",
        "PSYoungGen" | "PSOldGen" | "ParOldGen" | "ASPSYoungGen" => "parallel",
        _ => return None,
    })
}

pub fn kb(text: &str) -> Kb {
    size_kb(text).unwrap_or(Kb::Small(0))
}

fn opt(c: &Captures, name: &str) -> Option<String> {
    c.name(name).map(|m| m.as_str().to_string())
}

fn refill(slot: &mut Option<String>, v: Option<&str>) {
    match (slot.as_mut(), v) {
        (Some(buf), Some(v)) => {
            buf.clear();
            buf.push_str(v);
        }
        (_, v) => *slot = v.map(String::from),
    }
}

/// LegacyHandler._stamp
pub fn stamp(ev: &mut Event, date: Option<&str>, up: Option<&str>) {
    if let Some(u) = up.filter(|u| !u.is_empty()) {
        ev.uptime_s = Some(num(u));
    }
    match date.filter(|d| !d.is_empty()) {
        Some(d) => {
            ev.wall = wall_of_date(d);
            ev.wall_from_start = false;
        }
        None => ev.wall_from_start = true,
    }
}

/// _g1_detail: sizes of a G1 '[Eden: ... Survivors: ... Heap: ...]' line.
pub fn g1_detail(ev: &mut Event, dm: &Captures) {
    let (eb, ea) = (kb(&dm["eb"]), kb(&dm["ea"]));
    let (sb, sa) = (kb(&dm["sb"]), kb(&dm["sa"]));
    ev.young[0] = Some(Kb::add(&eb, &sb));
    ev.young[1] = Some(Kb::add(&ea, &sa));
    ev.young[2] = Some(Kb::add(&kb(&dm["eca"]), &sa));
    ev.heap = [Some(kb(&dm["hb"])), Some(kb(&dm["ha"])), Some(kb(&dm["hc"]))];
}

/// _conc_type: the logged name as an event type slug.
pub fn conc_type(base: &str) -> String {
    let rest = &base["concurrent-".len()..];
    let ok = res().conc_name_ok.find(rest).map_or(false, |m| m.start() == 0 && m.end() == rest.len())
        && fullmatch(&res().conc_name_ok, rest);
    if ok {
        return base.to_string();
    }
    let s = slug(rest);
    format!("concurrent-{}", if s.is_empty() { "unknown" } else { &s })
}

fn fullmatch(re: &Re, s: &str) -> bool {
    // [a-z0-9]+(?:-[a-z0-9]+)*: the leftmost-first match is the longest one
    re.find(s).map_or(false, |m| m.start() == 0 && m.end() == s.len())
}

/// Replace every match of `re` in `s` with what `f` returns; (result, matched at all).
fn sub_with(re: &Re, s: &str, mut f: impl FnMut(&Captures)) -> (String, bool) {
    let mut out = String::new();
    let mut last = 0;
    let mut any = false;
    for c in re.captures_iter(s) {
        let m = c.get(0).unwrap();
        out.push_str(&s[last..m.start()]);
        f(&c);
        last = m.end();
        any = true;
    }
    if !any {
        return (s.to_string(), false);
    }
    out.push_str(&s[last..]);
    (out, true)
}

fn sub_empty(re: &Re, s: &str, changed: &mut bool) -> String {
    let (r, any) = sub_with(re, s, |_| {});
    *changed |= any;
    r
}

impl Legacy {
    pub fn flush(&mut self, out: &mut Vec<Event>) {
        if let Some(ev) = self.last.take() {
            out.push(ev);
        }
        self.detail_depth = 0;
    }

    pub fn span(&self, o: &Owner) -> Option<(Event, Event)> {
        let (fd, fu) = self.first_prefix.as_ref()?;
        let (ld, lu) = self.last_prefix.as_ref()?;
        let mut a = Event::new("x", o.collector.clone(), 0);
        let mut b = a.clone();
        stamp(&mut a, fd.as_deref(), fu.as_deref());
        stamp(&mut b, ld.as_deref(), lu.as_deref());
        Some((a, b))
    }

    fn track_prefix(&mut self, date: Option<&str>, up: Option<&str>) {
        if self.first_prefix.is_none() {
            self.first_prefix = Some((date.map(String::from), up.map(String::from)));
        }
        // once a line: refill the last prefix's buffers rather than allocate new ones
        let last = self.last_prefix.get_or_insert((None, None));
        refill(&mut last.0, date);
        refill(&mut last.1, up);
    }

    // -- embedded items ----------------------------------------------------------------------

    /// `_extract`: cut embedded items out of `s` (emitting their events); (rest, changed).
    pub fn extract(&mut self, o: &mut Owner, s: &str, line_no: u64, out: &mut Vec<Event>, in_record: bool) -> (String, bool) {
        let r = res();
        let mut s = s.to_string();
        let mut changed = false;
        if s.contains("concurrent-") {
            let mut found = Vec::new();
            let (t, any) = sub_with(&r.conc, &s, |c| found.push(conc_item(c)));
            for item in found {
                self.conc(o, item, line_no, out, in_record);
            }
            changed |= any;
            s = t;
        }
        if s.contains("G1Ergonomics") {
            s = sub_empty(&r.ergo, &s, &mut changed);
        }
        if s.contains("Total time for which") {
            let mut found = Vec::new();
            let (t, any) = sub_with(&r.stopped, &s, |c| {
                let pm = r.prefix.captures(&c["pfx"]);
                let p = |n: &str| pm.as_ref().and_then(|m| opt(m, n));
                found.push((p("date"), p("up"), c["t"].to_string(), opt(c, "r"), c[0].to_string()))
            });
            for (date, up, t, rr, whole) in found {
                let ms = num(&t) * 1000.0;
                let mut ev = Event::new("safepoint", o.collector.clone(), line_no);
                ev.pause_ms = Some(ms);
                ev.duration_ms = Some(ms);
                ev.ttsp_ms = rr.filter(|x| !x.is_empty()).map(|x| num(&x) * 1000.0);
                ev.phase = Some(STOPPED_PHASE.into());
                stamp(&mut ev, date.as_deref(), up.as_deref());
                if o.keep_raw {
                    ev.raw = Some(whole.into());
                }
                self.emit_side(ev, out, in_record);
            }
            changed |= any;
            s = t;
        }
        if s.contains("Application time:") {
            s = sub_empty(&r.apptime, &s, &mut changed);
        }
        if s.contains("AdaptiveSize") {
            s = sub_empty(&r.adaptive, &s, &mut changed);
        }
        if s.contains("abort preclean") {
            s = sub_empty(&r.cms_abort, &s, &mut changed);
        }
        if s.contains(" GC:") {
            s = sub_empty(&r.before_after, &s, &mut changed);
        }
        if s.contains("TLAB") {
            s = sub_empty(&r.tlab, &s, &mut changed);
        }
        if s.contains("[Preclean ") {
            s = sub_empty(&r.preclean_ref, &s, &mut changed);
        }
        (s, changed)
    }

    /// events found inside an open record are emitted before it; outside a record, after
    /// the pending detail lines
    fn emit_side(&mut self, ev: Event, out: &mut Vec<Event>, in_record: bool) {
        if in_record {
            out.push(ev);
        } else {
            self.flush(out);
            self.last = Some(ev); // '[Times: ...]' / dedup statistics may follow
        }
    }

    fn conc(&mut self, o: &mut Owner, c: ConcItem, line_no: u64, out: &mut Vec<Event>, in_record: bool) {
        let name = c.name;
        let mut base = name[name.find("concurrent-").unwrap()..].to_string();
        if base.ends_with("-end") {
            base.truncate(base.len() - 4);
        }
        let (date, up) = (c.date.as_deref(), c.up.as_deref());
        if name.contains("CMS-") {
            self.saw_cms = true;
            o.set_collector_legacy(Some("cms"));
        } else {
            self.saw_g1 = true;
            o.set_collector_legacy(Some("g1"));
        }
        if c.start {
            self.conc_starts.insert(base, (c.date.clone(), c.up.clone(), line_no));
            return;
        }
        let Some(wall) = c.b.or(c.a).or(c.c) else {
            // markers without a duration ('concurrent-mark-abort', '-reset-for-overflow')
            if let Some(phase) = base.strip_suffix("-abort") {
                let start = self.conc_starts.remove(phase);
                let mut ev = Event::new(conc_type(phase), o.collector.clone(), start.as_ref().map_or(line_no, |s| s.2));
                ev.phase = Some(name.as_str().into());
                ev.flags = vec!["aborted"];
                match &start {
                    Some((sd, su, _)) => {
                        stamp(&mut ev, sd.as_deref(), su.as_deref());
                        if let (Some(su), Some(up)) = (su.as_deref().filter(|x| !x.is_empty()), up.filter(|x| !x.is_empty())) {
                            let d = crate::pyfns::round3((num(up) - num(su)) * 1000.0);
                            ev.concurrent_ms = Some(d);
                            ev.duration_ms = Some(d);
                        }
                    }
                    None => stamp(&mut ev, date, up),
                }
                self.emit_side(ev, out, in_record);
            }
            return;
        };
        let v = num(&wall);
        let dur = if c.unit.as_deref() == Some("ms") { v } else { v * 1000.0 };
        let start = self.conc_starts.remove(&base);
        let mut ev = Event::new(conc_type(&base), o.collector.clone(), start.as_ref().map_or(line_no, |s| s.2));
        ev.concurrent_ms = Some(dur);
        ev.duration_ms = Some(dur);
        ev.phase = Some(name.as_str().into());
        match &start {
            Some((sd, su, _)) => stamp(&mut ev, sd.as_deref(), su.as_deref()),
            None => stamp(&mut ev, date, up),
        }
        if let Some(tu) = c.tu {
            ev.user_s = Some(num(&tu));
            ev.sys_s = Some(num(c.ts.as_deref().unwrap_or("")));
            ev.real_s = Some(num(c.tr.as_deref().unwrap_or("")));
        }
        if o.keep_raw {
            ev.raw = Some(c.whole.into());
        }
        self.emit_side(ev, out, in_record);
    }

    // -- main entry --------------------------------------------------------------------------

    pub fn handle(&mut self, o: &mut Owner, line: &str, line_no: u64, out: &mut Vec<Event>) -> u8 {
        if self.rec.is_none() && !self.heap_block && !self.stats_block {
            if let Some(code) = self.fast_paths(o, line, line_no, out) {
                return code;
            }
        }
        let r = res();
        let mut s: String = rstrip_nl(line).to_string();
        if first_is_digit(&s) {
            if let Some(pm) = r.prefix.captures(&s) {
                if pm.get(0).unwrap().end() > 0 {
                    let (d, u) = (opt(&pm, "date"), opt(&pm, "up"));
                    self.track_prefix(d.as_deref(), u.as_deref());
                }
            }
        }
        // heap printouts (PrintHeapAtGC, exit summary) contain unbalanced '[0x..., 0x...)'
        if self.heap_block {
            let st = strip(&s);
            if st.starts_with('}') {
                self.heap_block = st.contains("Heap before GC invocations=");
                return self.rec_add_ignored();
            }
            let in_rec = self.rec.is_some();
            if record_start(&s).is_none() && !(in_rec && (lstrip(&s).starts_with(',') || lstrip(&s).starts_with(':'))) {
                let n_out = out.len();
                self.extract(o, &s, line_no, out, in_rec); // concurrent phases in the block
                if let Some(rec) = &mut self.rec {
                    rec.lines.push((line_no, RecLine::Ignored));
                    return DEFERRED;
                }
                return if out.len() > n_out { EVENT } else { IGNORED };
            }
            self.heap_block = false;
        }
        if self.stats_block {
            if record_start(&s).is_some() || s.contains("Total time for which") {
                self.stats_block = false;
            } else if s.starts_with(", [Metaspace:") {
                return EVENT; // metaspace line of the last JDK 8 Shenandoah cycle
            } else {
                return IGNORED;
            }
        }
        if s.contains("GC invocations=") {
            if let Some(hb) = r.heapblock.find(&s) {
                self.heap_block = true;
                s.truncate(hb.start());
                if r.prefix_only.is_match(&s) {
                    if let Some(rec) = &mut self.rec {
                        rec.lines.push((line_no, RecLine::Ignored));
                        return DEFERRED;
                    }
                    return IGNORED;
                }
            }
        }
        if self.rec.is_some() {
            return self.cont(o, s, line_no, out, false);
        }
        self.fresh_line(o, line, s, line_no, out)
    }

    fn rec_add_ignored(&mut self) -> u8 {
        match &mut self.rec {
            None => IGNORED,
            Some(rec) => {
                rec.lines.push((0, RecLine::Ignored)); // an ignored line inside an open record
                DEFERRED
            }
        }
    }

    /// A line while no record is open.
    fn fresh_line(&mut self, o: &mut Owner, line: &str, s: String, line_no: u64, out: &mut Vec<Event>) -> u8 {
        let r = res();
        let pending = self.last.is_some() || self.detail_depth > 0;
        if pending && r.detail_line.is_match(&s) && record_start(&s).is_none() {
            let (t, _) = self.extract(o, &s, line_no, out, true);
            return self.detail(&t);
        }
        let c0 = s.as_bytes().first().copied();
        if c0 == Some(b' ') || c0 == Some(b'\t') {
            let st = lstrip(&s);
            if (st.starts_with('[') || self.detail_depth > 0) && (self.last.is_some() || self.detail_depth > 0) {
                return self.detail(&s);
            }
            if self.detail_depth == 0 && r.class_histo.is_match(&s) {
                return IGNORED;
            }
        }
        if c0 == Some(b'[') && self.last.is_some() && !top_start(&s) {
            return self.detail(&s); // JDK 6 G1 details at column 0
        }
        let (s2, changed) = self.extract(o, &s, line_no, out, false);
        if changed && r.residue.is_match(&s2) {
            return EVENT;
        }
        if let Some(sm) = record_start(&s2) {
            if &sm["head"] != "Class Histogram" {
                self.flush(out);
            }
            self.rec = Some(Record { pieces: Vec::new(), depth: 0, lines: Vec::new(), first_line: line_no, raw: line.to_string() });
            return self.cont(o, s2, line_no, out, true);
        }
        let ls = lstrip(&s2);
        if (ls.starts_with("[Times:") || ls.starts_with("[Eden:") || ls.starts_with("[Metaspace:")) && self.last.is_some() {
            return self.detail(&s2);
        }
        if r.stats_start.is_match(&s2) {
            self.flush(out);
            self.stats_block = true;
            return IGNORED;
        }
        if r.legacy_info.is_match(&s2) || r.info_line.is_match(&s2) || r.class_histo.is_match(&s2) {
            return IGNORED;
        }
        UNKNOWN
    }

    /// `_detail`: a detail line of the pending event.
    pub fn detail(&mut self, s: &str) -> u8 {
        let r = res();
        if let Some(ev) = &mut self.last {
            if s.contains("Eden:") {
                if let Some(dm) = r.g1_detail.captures(s) {
                    g1_detail(ev, &dm);
                }
            }
            if s.contains("Metaspace:") || s.contains("Perm:") {
                for inner in r.inner.captures_iter(s) {
                    if let Some(sm) = r.sub.captures(&inner[1]) {
                        if matches!(&sm["name"], "Perm" | "PSPermGen" | "CMS Perm" | "Metaspace" | "Class") {
                            ev.meta = [Some(kb(&sm["b"])), Some(kb(&sm["a"])), Some(kb(&sm["c"]))];
                        }
                    }
                }
            }
            if s.contains("[Times:") && ev.user_s.is_none() {
                if let Some(tm) = r.times.captures(s) {
                    ev.user_s = Some(num(&tm[1]));
                    ev.sys_s = Some(num(&tm[2]));
                    ev.real_s = Some(num(&tm[3]));
                }
            }
        }
        let opens = s.bytes().filter(|&b| b == b'[').count() as i64;
        let closes = s.bytes().filter(|&b| b == b']').count() as i64;
        self.detail_depth = (self.detail_depth + opens - closes).max(0);
        EVENT
    }

    // -- fast paths --------------------------------------------------------------------------

    fn label_ok(&mut self, label: &str) -> bool {
        if let Some(ok) = self.detail_labels.get(label) {
            return *ok;
        }
        let text = format!(" {label}");
        let ok = !DETAIL_MARKERS.iter().any(|m| text.contains(m));
        if self.detail_labels.len() < 1024 {
            self.detail_labels.insert(label.to_string(), ok);
        }
        ok
    }

    fn set_times(ev: &mut Event, fm: &Captures) {
        if ev.user_s.is_none() {
            ev.user_s = parse_f64(&fm[1]);
            ev.sys_s = parse_f64(&fm[2]);
            ev.real_s = parse_f64(&fm[3]);
        }
    }

    /// The shortcuts of LegacyHandler.handle for the commonest lines (same results).
    fn fast_paths(&mut self, o: &mut Owner, line: &str, line_no: u64, out: &mut Vec<Event>) -> Option<u8> {
        let r = res();
        let c0 = line.as_bytes().first().copied();
        if c0 == Some(b' ') || c0 == Some(b'\t') {
            if self.last.is_some() || self.detail_depth > 0 {
                if let Some(fm) = r.fast_detail.captures(line) {
                    if self.label_ok(&fm[1]) {
                        return Some(EVENT);
                    }
                } else if let Some(fm) = r.fast_times.captures(line) {
                    if let Some(ev) = &mut self.last {
                        Self::set_times(ev, &fm);
                    }
                    return Some(EVENT);
                } else if let Some(fm) = r.fast_eden.captures(line) {
                    if let Some(ev) = &mut self.last {
                        g1_detail(ev, &fm);
                    }
                    return Some(EVENT);
                }
            }
        } else if c0 == Some(b'[') && self.last.is_some() {
            if let Some(fm) = r.fast_detail.captures(line) {
                if self.label_ok(&fm[1]) && !top_start(line) {
                    return Some(EVENT);
                }
            } else if line.starts_with("[Times: ") {
                if let Some(fm) = r.fast_times.captures(line) {
                    Self::set_times(self.last.as_mut().unwrap(), &fm);
                    return Some(EVENT);
                }
            } else if line.starts_with("[Eden: ") {
                if let Some(fm) = r.fast_eden.captures(line) {
                    g1_detail(self.last.as_mut().unwrap(), &fm);
                    return Some(EVENT);
                }
            }
        }
        if first_is_digit(line) || line.starts_with("[GC") {
            if let Some(fm) = scan_young(line) {
                if let Some(ev) = self.fast_young(o, &fm, line, line_no, true) {
                    self.flush(out);
                    self.last = Some(ev);
                    return Some(EVENT);
                }
            } else if line.contains("Total time for which") {
                if let Some(fm) = r.fast_stopped.captures(line) {
                    return Some(self.fast_stopped(o, &fm, line_no, out));
                }
            }
        }
        None
    }

    fn fast_cause(&mut self, q: &str) -> Option<(String, Vec<&'static str>)> {
        if let Some(info) = self.fast_causes.get(q) {
            return info.clone();
        }
        let ql = strip(q);
        let text = format!(" ({q}) ");
        let info = if ql.is_empty()
            || G1_TYPES.contains(&ql)
            || ql.ends_with(['K', 'M', 'G', 'B'])
            || ql == "CMS Initial Mark"
            || DETAIL_MARKERS.iter().any(|m| text.contains(m))
            || ["concurrent mode failure", "concurrent mode interrupted", "promotion failed"].iter().any(|m| text.contains(m))
        {
            None
        } else {
            let mut flags = Vec::new();
            if ql == "System.gc()" || ql == "System" {
                flags.push("system-gc");
            }
            if ql.contains("Humongous") {
                flags.push("humongous");
            }
            Some((ql.to_string(), flags))
        };
        if self.fast_causes.len() < 256 {
            self.fast_causes.insert(q.to_string(), info.clone());
        }
        info
    }

    /// `_fast_young`: a complete one-line young collection (or None: general path).
    pub fn fast_young(&mut self, o: &mut Owner, fm: &Young, line: &str, line_no: u64, track: bool) -> Option<Event> {
        let (mut cause, mut flags) = (None, Vec::new());
        if let Some(q) = fm.cause {
            let (c, f) = self.fast_cause(q)?;
            cause = Some(c);
            flags = f;
        }
        // at most 15 digits: always an i64
        let int = |t: &str| Some(Kb::Small(crate::fastnum::small_int(t.as_bytes()).or_else(|| t.parse().ok())?));
        let pause = parse_f64(fm.t).unwrap_or(f64::NAN) * 1000.0;
        let coll = o.set_collector_legacy(gen_collector(fm.gen));
        let mut ev = Event::new("young", coll, line_no);
        ev.cause = cause.map(Into::into);
        ev.pause_ms = Some(pause);
        ev.duration_ms = Some(pause);
        ev.heap = [int(fm.hb), int(fm.ha), int(fm.hc)];
        ev.young = [int(fm.yb), int(fm.ya), int(fm.yc)];
        ev.flags = flags;
        ev.phase = Some("GC".into());
        if let Some(g) = fm.gcid {
            ev.gc_id = PyInt::parse(g);
        }
        let (date, up) = (fm.date, fm.up);
        if (up.is_some() || date.is_some()) && track {
            self.track_prefix(date, up);
        }
        stamp(&mut ev, date, up);
        if let Some((u, s, r)) = fm.times {
            ev.user_s = parse_f64(u);
            ev.sys_s = parse_f64(s);
            ev.real_s = parse_f64(r);
        }
        if o.keep_raw {
            ev.raw = Some(rstrip_nl(line).into());
        }
        Some(ev)
    }

    /// `_fast_stopped`: a whole PrintGCApplicationStoppedTime line.
    fn fast_stopped(&mut self, o: &mut Owner, fm: &Captures, line_no: u64, out: &mut Vec<Event>) -> u8 {
        let (date, up) = (fm.name("date").map(|m| m.as_str()), fm.name("up").map(|m| m.as_str()));
        if date.is_some() || up.is_some() {
            self.track_prefix(date, up);
        }
        let pause = parse_f64(&fm[5]).unwrap_or(f64::NAN) * 1000.0;
        let mut ev = Event::new("safepoint", o.collector.clone(), line_no);
        ev.pause_ms = Some(pause);
        ev.duration_ms = Some(pause);
        ev.ttsp_ms = fm.get(6).map(|m| parse_f64(m.as_str()).unwrap_or(f64::NAN) * 1000.0);
        ev.phase = Some(STOPPED_PHASE.into());
        stamp(&mut ev, date, up);
        if o.keep_raw {
            ev.raw = Some(fm["body"].into());
        }
        self.emit_side(ev, out, false);
        EVENT
    }

    pub fn finish(&mut self, o: &mut Owner, out: &mut Vec<Event>) {
        if let Some(rec) = self.rec.take() {
            self.abandon(o, rec);
        }
        self.flush(out);
    }
}

/// What `_conc` reads of a `_CONC_RE` match.
pub struct ConcItem {
    name: String,
    start: bool,
    date: Option<String>,
    up: Option<String>,
    a: Option<String>,
    b: Option<String>,
    c: Option<String>,
    unit: Option<String>,
    tu: Option<String>,
    ts: Option<String>,
    tr: Option<String>,
    whole: String,
}

fn conc_item(c: &Captures) -> ConcItem {
    let nonempty = |n: &str| opt(c, n).filter(|x| !x.is_empty());
    // the prefix of the match, read with the capturing prefix pattern (as _conc does)
    let pfx = &c["pfx"];
    let pm = res().prefix.captures(pfx);
    let p = |n: &str| pm.as_ref().and_then(|m| opt(m, n));
    ConcItem {
        name: c["name"].to_string(),
        start: c.name("start").is_some(),
        date: p("date"),
        up: p("up"),
        a: nonempty("a"),
        b: nonempty("b"),
        c: nonempty("c"),
        unit: opt(c, "unit"),
        tu: nonempty("tu"),
        ts: opt(c, "ts"),
        tr: opt(c, "tr"),
        whole: c[0].to_string(),
    }
}
