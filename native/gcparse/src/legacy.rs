//! JDK <= 8 handler (`_legacy.LegacyHandler`): line dispatch, embedded items, detail lines
//! and the fast paths.  Records (multi-line, nested brackets) are in legacy_record.rs.

use crate::core::{Owner, DEFERRED, EVENT, IGNORED, UNKNOWN};
use crate::event::{Event, Stamp, Wall};
use crate::legacy_shortcuts::FastCause;
use crate::out::Out;
use crate::legacy_res::{record_start, res, top_start};
use crate::pyfns::{first_is_digit, lstrip, num, rstrip_nl, size_kb, slug, strip, Kb};
use crate::ts::wall_of_date;
use crate::unified::STOPPED_PHASE;
use crate::young::YoungRow;
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
    /// the pending event (detail lines may follow): one of `last` and `young`, or none
    pub last: Option<Event>,
    pub young: Option<YoungRow>,
    pub detail_depth: i64,
    pub heap_block: bool,
    pub stats_block: bool,
    pub conc_starts: HashMap<String, (Option<String>, Option<String>, u64)>,
    pub saw_cms: bool,
    pub saw_g1: bool,
    pub cms_next_remark: bool,
    pub first_prefix: Option<Prefix>,
    pub last_prefix: Option<Prefix>,
    pub(crate) detail_labels: HashMap<String, bool>,
    pub(crate) fast_causes: HashMap<String, FastCause>,
}

pub const DETAIL_MARKERS: [&str; 14] = [
    "concurrent-", "G1Ergonomics", "Total time for which", "Application time:", "AdaptiveSize",
    "abort preclean", " GC:", "TLAB", "[Preclean ", "GC invocations=", "Eden:", "Metaspace:",
    "Perm:", "[Times:",
];

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

/// LegacyHandler._stamp (of a new event)
pub fn legacy_stamp(date: Option<&str>, up: Option<&str>) -> Stamp {
    legacy_stamp_of(date, up.filter(|u| !u.is_empty()).map(num))
}

/// `legacy_stamp` with the uptime already read.
pub fn legacy_stamp_of(date: Option<&str>, uptime_s: Option<f64>) -> Stamp {
    match date.filter(|d| !d.is_empty()) {
        Some(d) => Stamp { uptime_s, wall: wall_of_date(d), wall_from_start: false },
        None => Stamp { uptime_s, wall: Wall::None, wall_from_start: true },
    }
}

/// LegacyHandler._stamp on a new event
pub fn stamp(ev: &mut Event, date: Option<&str>, up: Option<&str>) {
    ev.set_stamp(legacy_stamp(date, up));
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
    pub fn flush(&mut self, out: &mut Out) {
        if let Some(y) = self.young.take() {
            out.young(y);
        } else if let Some(ev) = self.last.take() {
            out.push(ev);
        }
        self.detail_depth = 0;
    }

    /// An event is pending.
    pub fn has_last(&self) -> bool {
        self.last.is_some() || self.young.is_some()
    }

    /// The pending event, to be completed by a detail line (a young row becomes an Event).
    pub fn last_mut(&mut self) -> Option<&mut Event> {
        if let Some(y) = self.young.take() {
            self.last = Some(y.into_event());
        }
        self.last.as_mut()
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

    pub(crate) fn track_prefix(&mut self, date: Option<&str>, up: Option<&str>) {
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
    pub fn extract(&mut self, o: &mut Owner, s: &str, line_no: u64, out: &mut Out, in_record: bool) -> (String, bool) {
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
    pub(crate) fn emit_side(&mut self, ev: Event, out: &mut Out, in_record: bool) {
        if in_record {
            out.push(ev);
        } else {
            self.flush(out);
            self.last = Some(ev); // '[Times: ...]' / dedup statistics may follow
        }
    }

    fn conc(&mut self, o: &mut Owner, c: ConcItem, line_no: u64, out: &mut Out, in_record: bool) {
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

    pub fn handle(&mut self, o: &mut Owner, line: &str, line_no: u64, out: &mut Out) -> u8 {
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
    fn fresh_line(&mut self, o: &mut Owner, line: &str, s: String, line_no: u64, out: &mut Out) -> u8 {
        let r = res();
        let pending = self.has_last() || self.detail_depth > 0;
        if pending && r.detail_line.is_match(&s) && record_start(&s).is_none() {
            let (t, _) = self.extract(o, &s, line_no, out, true);
            return self.detail(&t);
        }
        let c0 = s.as_bytes().first().copied();
        if c0 == Some(b' ') || c0 == Some(b'\t') {
            let st = lstrip(&s);
            if (st.starts_with('[') || self.detail_depth > 0) && (self.has_last() || self.detail_depth > 0) {
                return self.detail(&s);
            }
            if self.detail_depth == 0 && r.class_histo.is_match(&s) {
                return IGNORED;
            }
        }
        if c0 == Some(b'[') && self.has_last() && !top_start(&s) {
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
        if (ls.starts_with("[Times:") || ls.starts_with("[Eden:") || ls.starts_with("[Metaspace:")) && self.has_last() {
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
        if let Some(ev) = self.last_mut() {
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

    pub fn finish(&mut self, o: &mut Owner, out: &mut Out) {
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
