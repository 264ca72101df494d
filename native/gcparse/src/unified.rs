//! JDK 9+ unified logging handler (`_unified.UnifiedHandler`): decorators, lines without a
//! GC id, per-id state.  GC(n) lines are in unified_gc.rs (and the files it names).

use crate::out::Out;
use crate::core::{Owner, EVENT, IGNORED, UNKNOWN};
use crate::event::Event;
use crate::layout::{detect_layout, Layout, Locs};
use crate::tagset::{self, TagKinds};
use crate::pyfns::{is_decimal, num, py_float, rstrip, rstrip_nl, size_kb, strip, Kb, PyInt};
use crate::rx::py_m;
use crate::ts::{wall_of_date, wall_of_epoch_ms, Ts, Up};
use crate::rx::Re;
use crate::unified_scan::{self as scan, plain};
use std::sync::{Arc, OnceLock};

pub const SAFEPOINT_PHASE: &str = "Safepoint";
pub const STOPPED_PHASE: &str = "Total time for which application threads were stopped";

pub struct PlainRes {
    pub safepoint: Re,
    pub stopped: Re,
    pub stall: Re,
    pub info_tags: Re,
    pub region_size: Re,
    pub info_line: Re,
    pub generic_info: Re,
}

pub fn plain_res() -> &'static PlainRes {
    static R: OnceLock<PlainRes> = OnceLock::new();
    R.get_or_init(|| PlainRes {
        safepoint: py_m(concat!(
            r#"Safepoint "(?P<op>[^"]*)", Time since last: \d+ ns, Reaching safepoint: (?P<reach>\d+) ns,"#,
            r".*\bTotal: (?P<total>\d+) ns(?:,.*)?\s*$"
        )),
        stopped: py_m(concat!(
            r"Total time for which application threads were stopped: (?P<total>\d+(?:[.,]\d+)?) seconds",
            r"(?:, Stopping threads took: (?P<reach>\d+(?:[.,]\d+)?) seconds)?\s*$"
        )),
        stall: py_m(r"(?:Allocation|Relocation) Stall \((?P<thread>.*)\) (?P<dur>\d+(?:[.,]\d+)?) ?ms\s*$"),
        info_tags: crate::rx::py(
            r"\b(?:init|exit|stats|ergo|cds|coops|director|metaspace|task|alloc|ref|phases|heap)\b",
        ),
        region_size: py_m(r"Heap [Rr]egion [Ss]ize: (\S+)"),
        info_line: crate::rx::spec(crate::vocab::INFO_LINE, &[], true),
        generic_info: crate::rx::spec(crate::vocab::GENERIC_INFO, &[], true),
    })
}

/// Per GC id state of multi-line events (`_GcState`).
#[derive(Default)]
pub struct GcState {
    pub gc_id: PyInt0,
    pub first_line: u64,
    pub first_ts: Option<Ts>,
    pub pause_line: u64,
    pub pause_ts: Option<Ts>,
    pub pause_raw: Option<Box<str>>,
    pub young: Option<[Kb; 3]>,
    pub old: Option<[Kb; 3]>,
    pub meta: Option<[Kb; 3]>,
    pub regions: Option<Vec<(Box<str>, PyInt, PyInt)>>,
    pub flags: Vec<&'static str>,
    /// open concurrent phases: (name, ts, line, marker, raw, level)
    pub phases: Vec<Phase>,
    /// open cycle wrapper: (text, ts, line, raw)
    pub cycle: Option<(Option<Ts>, u64, Option<Box<str>>)>,
    pub cycle_flags: Vec<&'static str>,
    pub shen_first_name: Option<Box<str>>,
    pub shen_heap: Option<(Box<str>, Box<str>, Box<str>)>,
    pub shen_has_conc: bool,
    pub last_ts: Option<Ts>,
    pub zgen_young: Option<(Kb, Kb)>,
    pub zgen_old: Option<(Kb, Kb)>,
    pub nested: Vec<Event>,
    pub trigger: Option<Box<str>>,
}

/// PyInt with a Default (for the derive above).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PyInt0(pub PyInt);
impl Default for PyInt0 {
    fn default() -> Self {
        PyInt0(PyInt::Small(0))
    }
}

pub struct Phase {
    pub name: Box<str>,
    pub ts: Option<Ts>,
    pub line: u64,
    pub raw: Option<Box<str>>,
}

impl GcState {
    pub fn new(gc_id: PyInt, line_no: u64, ts: Option<Ts>) -> GcState {
        GcState { gc_id: PyInt0(gc_id), first_line: line_no, last_ts: ts.clone(), first_ts: ts, ..Default::default() }
    }
    pub fn reset_pause(&mut self) {
        self.pause_line = 0;
        self.pause_ts = None;
        self.pause_raw = None;
        self.young = None;
        self.old = None;
        self.meta = None;
        self.regions = None;
        self.flags.clear();
    }
    pub fn open(&self) -> bool {
        self.pause_line != 0 || !self.phases.is_empty() || self.cycle.is_some()
    }
}

/// Python int ordering of GC ids (sorted(self.states)).
pub fn cmp_ids(a: &PyInt, b: &PyInt) -> std::cmp::Ordering {
    match (a, b) {
        (PyInt::Small(x), PyInt::Small(y)) => x.cmp(y),
        (PyInt::Small(_), PyInt::Big(_)) => std::cmp::Ordering::Less,
        (PyInt::Big(_), PyInt::Small(_)) => std::cmp::Ordering::Greater,
        (PyInt::Big(x), PyInt::Big(y)) => x.len().cmp(&y.len()).then_with(|| x.cmp(y)),
    }
}

/// The decorators of the current line: capture locations of its layout.
pub struct Deco<'a> {
    pub line: &'a str,
    pub locs: &'a Locs,
    pub layout: &'a Layout,
}

impl<'a> Deco<'a> {
    pub fn group(&self, g: Option<usize>) -> Option<&'a str> {
        let (a, b) = self.locs.get(g?)?;
        Some(&self.line[a..b])
    }
    /// `_ts(m, layout)`
    pub fn ts(&self) -> Ts {
        let l = self.layout;
        let up = if l.g_up.is_some() {
            self.group(l.g_up).map(|t| Up::Text(t.into()))
        } else if l.g_upms.is_some() {
            self.group(l.g_upms).map(|t| Up::from_ms_text(t, 1000.0))
        } else if l.g_upns.is_some() {
            self.group(l.g_upns).map(|t| Up::from_ms_text(t, 1e9))
        } else {
            None
        };
        Ts { wall: self.group(l.g_wall).map(Into::into), wallms: self.group(l.g_wallms).map(Into::into), up }
    }
    pub fn level(&self) -> Option<&'a str> {
        self.group(self.layout.g_level)
    }
}

pub struct Unified {
    pub layout: Option<Arc<Layout>>,
    pub locs: Option<Locs>,
    pub states: Vec<GcState>,
    pub ready: Vec<Event>,
    pub region_kb: Option<Kb>,
    pub safepoint_op: Option<Box<str>>,
    pub trigger: Option<Box<str>>,
    pub shen_open: Option<PyInt>,
    pub decorated: bool,
    pub has_level: bool,
    pub exit_block: bool,
    pub foreign_block: bool,
    tag_kind: TagKinds,
    pub first_ts: Option<Ts>,
    /// the last decorated line and its layout (its time stamp is converted on demand)
    last_line: String,
    last_locs: Option<Locs>,
    last_layout: Option<Arc<Layout>>,
}

impl Default for Unified {
    fn default() -> Self {
        Unified {
            layout: None,
            locs: None,
            states: Vec::new(),
            ready: Vec::new(),
            region_kb: None,
            safepoint_op: None,
            trigger: None,
            shen_open: None,
            decorated: false,
            has_level: false,
            exit_block: false,
            foreign_block: false,
            tag_kind: TagKinds::default(),
            first_ts: None,
            last_line: String::new(),
            last_locs: None,
            last_layout: None,
        }
    }
}

impl Unified {
    pub fn flush_ready(&mut self, out: &mut Out) {
        self.ready.drain(..).for_each(|e| out.push(e));
    }

    /// `_new_event`: collector from the hint, time stamp, raw line.
    pub fn new_event(
        &mut self, o: &mut Owner, etype: &str, ts: Option<&Ts>, line_no: u64, raw: Option<&str>,
        hint: Option<&'static str>,
    ) -> Event {
        let c = o.set_collector_unified(hint);
        let mut ev = Event::new(etype, c, line_no);
        stamp(&mut ev, ts);
        if o.keep_raw {
            ev.raw = raw.map(Into::into);
        }
        ev
    }

    /// (first, last) time stamps of decorated lines.
    pub fn span(&self) -> Option<(Option<Ts>, Option<Ts>)> {
        self.first_ts.as_ref()?;
        let last = match (&self.last_locs, &self.last_layout) {
            (Some(locs), Some(layout)) => Some(Deco { line: &self.last_line, locs, layout }.ts()),
            _ => None,
        };
        Some((self.first_ts.clone(), last))
    }

    // -- main entry --------------------------------------------------------------------------

    /// `handle`: EVENT/IGNORED/UNKNOWN, or 0 if the line is not unified.
    pub fn handle(&mut self, o: &mut Owner, line: &str, line_no: u64, out: &mut Out) -> u8 {
        let lb = line.as_bytes();
        if lb.first() == Some(&b'[') && !line[1..].starts_with("GC") && !line[1..].starts_with("Full") {
            let mut matched = false;
            if let (Some(layout), Some(locs)) = (&self.layout, &mut self.locs) {
                matched = layout.read(locs, line);
            }
            if !matched {
                let Some(new) = detect_layout(line) else { return 0 };
                let mut locs = new.locations();
                if !new.read(&mut locs, line) {
                    return 0;
                }
                self.has_level = new.g_level.is_some();
                self.layout = Some(Arc::new(new));
                self.locs = Some(locs);
                self.decorated = true;
            }
            let mut end = self.locs.as_ref().unwrap().get(0).unwrap().1;
            if line[end..].starts_with('[') {
                // the cached layout matched only a prefix (e.g. '[uptime][level]' header lines
                // followed by '[uptime][level][tags]' lines): re-detect
                if let Some(new) = detect_layout(line) {
                    if new.kinds.len() > self.layout.as_ref().unwrap().kinds.len() {
                        let mut locs = new.locations();
                        if new.read(&mut locs, line) {
                            self.has_level = new.g_level.is_some();
                            end = locs.get(0).unwrap().1;
                            self.layout = Some(Arc::new(new));
                            self.locs = Some(locs);
                        }
                    }
                }
            }
            // taken out for the call (no reference count traffic per line); nothing under
            // decorated_line reads or sets self.layout / self.locs
            let layout = self.layout.take().unwrap();
            let locs = self.locs.take().unwrap();
            let code = self.decorated_line(o, line, &line[end..], &locs, &layout, line_no, out);
            self.layout = Some(layout);
            self.locs = Some(locs);
            return code;
        }
        let msg = line;
        if self.foreign_block && self.decorated && !msg.starts_with("GC(") {
            // undecorated continuation of a multi-line message of a non-GC tag
            return IGNORED;
        }
        self.message(o, line, msg, None, line_no, out)
    }

    fn decorated_line(
        &mut self, o: &mut Owner, line: &str, msg: &str, locs: &Locs, layout: &Arc<Layout>,
        line_no: u64, out: &mut Out,
    ) -> u8 {
        // remember the line's decorators for span() (its time stamp is converted only when
        // asked; the group spans all lie before msg)
        self.last_line.clear();
        self.last_line.push_str(&line[..line.len() - msg.len()]);
        match (&mut self.last_locs, &self.last_layout) {
            (Some(l), Some(last)) if Arc::ptr_eq(last, layout) => l.clone_from(locs),
            _ => {
                self.last_locs = Some(locs.clone());
                self.last_layout = Some(layout.clone());
            }
        }
        let d = Deco { line, locs, layout };
        if self.first_ts.is_none() {
            self.first_ts = Some(d.ts());
        }
        if let Some(tags) = d.group(layout.g_tags) {
            let kind = self.tag_kind.kind(tags);
            if kind == tagset::FOREIGN {
                // output of other unified tags (class+load, os+thread, jit ...)
                self.foreign_block = true;
                return IGNORED;
            }
            self.foreign_block = false;
            if kind == tagset::INFO && !msg.starts_with("GC(") {
                // gc+init, gc+heap+exit, gc+stats, safepoint+cleanup ...: informational
                if msg.starts_with("Using ") || msg.starts_with("Heap ") || msg.starts_with("Initializing") {
                    self.plain_line(o, rstrip_nl(msg), Some(&d), line_no, out, line);
                }
                return IGNORED;
            }
        }
        self.message(o, line, msg, Some(&d), line_no, out)
    }

    fn message(
        &mut self, o: &mut Owner, line: &str, msg: &str, d: Option<&Deco>, line_no: u64, out: &mut Out,
    ) -> u8 {
        if msg.starts_with("GC(") {
            self.exit_block = false;
            let Some(j) = memchr::memchr(b')', &msg.as_bytes()[3..]).map(|j| j + 3) else { return UNKNOWN };
            let idtxt = &msg[3..j];
            if idtxt.is_empty() || !idtxt.chars().all(is_decimal) {
                return UNKNOWN; // (isdigit() would accept '²')
            }
            o.unified_mode = true;
            // msg[j + 2:]: skip ')' and the character after it
            let after = &msg[j + 1..];
            let mut it = after.chars();
            let skipped = it.next();
            let rest_all = it.as_str();
            if skipped.is_some() && rest_all.starts_with(' ') {
                // indented detail line (phase timings, worker statistics)
                return EVENT;
            }
            let rest = if rest_all.ends_with('\n') { rstrip_nl(rest_all) } else { rest_all };
            let gc_id = PyInt::parse(idtxt).unwrap_or(PyInt::Small(0));
            return self.gc_line(o, gc_id, rest, d, line_no, out, line);
        }
        let msg = rstrip_nl(msg);
        if d.is_none() {
            // undecorated line: unified only if we understand it, else the legacy handler's
            if !o.unified_mode
                && !(msg.starts_with("Using ")
                    || msg.starts_with("Initializing ")
                    || msg.starts_with("Safepoint \"")
                    || msg.starts_with("Allocation Stall ("))
            {
                return 0;
            }
            let code = self.plain_line(o, msg, d, line_no, out, line);
            return if code == UNKNOWN { 0 } else { code };
        }
        o.unified_mode = true;
        self.plain_line(o, msg, d, line_no, out, line)
    }

    // -- lines without GC id -----------------------------------------------------------------

    pub fn plain_line(
        &mut self, o: &mut Owner, msg: &str, d: Option<&Deco>, line_no: u64, out: &mut Out, raw: &str,
    ) -> u8 {
        self.flush_ready(out);
        let r = plain_res();
        let ts = d.map(|d| d.ts());
        let c0 = msg.as_bytes().first().copied().unwrap_or(0);
        if c0 == b'S' && msg.starts_with("Safepoint \"") {
            let sm = if plain(msg) {
                scan::safepoint(msg)
            } else {
                r.safepoint.captures(msg).map(|c| {
                    let g = |n: &str| c.name(n).unwrap().as_str();
                    (g("op"), g("reach"), g("total"))
                })
            };
            let Some((op, reach, total)) = sm else { return UNKNOWN };
            let mut ev = self.new_event(o, "safepoint", ts.as_ref(), line_no, Some(raw), None);
            let total = py_float(total).unwrap_or(f64::NAN) / 1e6;
            ev.pause_ms = Some(total);
            ev.duration_ms = Some(total);
            ev.ttsp_ms = Some(py_float(reach).unwrap_or(f64::NAN) / 1e6);
            ev.cause = Some(op.into());
            ev.phase = Some(SAFEPOINT_PHASE.into());
            out.push(ev);
            return EVENT;
        }
        if c0 == b'T' && msg.starts_with("Total time for which") {
            let Some(sm) = r.stopped.captures(msg) else { return UNKNOWN };
            let total = num(&sm["total"]) * 1000.0;
            let mut ev = self.new_event(o, "safepoint", ts.as_ref(), line_no, Some(raw), None);
            ev.pause_ms = Some(total);
            ev.duration_ms = Some(total);
            ev.ttsp_ms = sm.name("reach").filter(|m| !m.as_str().is_empty()).map(|m| num(m.as_str()) * 1000.0);
            ev.cause = self.safepoint_op.take().map(Into::into);
            ev.phase = Some(STOPPED_PHASE.into());
            out.push(ev);
            return EVENT;
        }
        if c0 == b'E' && msg.starts_with("Entering safepoint region: ") {
            let op = strip(&msg["Entering safepoint region: ".len()..]);
            self.safepoint_op = if op.is_empty() { None } else { Some(op.into()) };
            return IGNORED;
        }
        if (c0 == b'A' && msg.starts_with("Allocation Stall (")) || (c0 == b'R' && msg.starts_with("Relocation Stall (")) {
            let dur = if plain(msg) { scan::stall(msg) } else { r.stall.captures(msg).map(|c| c.name("dur").unwrap().as_str()) };
            let Some(dur) = dur else { return UNKNOWN };
            let etype = if c0 == b'A' { "allocation-stall" } else { "relocation-stall" };
            let mut ev = self.new_event(o, etype, ts.as_ref(), line_no, Some(raw), Some("zgc"));
            ev.duration_ms = Some(num(dur));
            ev.phase = Some(strip(msg).into());
            out.push(ev);
            return EVENT;
        }
        if c0 == b'O' && msg.starts_with("Out Of Memory (") {
            let mut ev = self.new_event(o, "out-of-memory", ts.as_ref(), line_no, Some(raw), Some("zgc"));
            ev.phase = Some(strip(msg).into());
            out.push(ev);
            return EVENT;
        }
        if c0 == b'U' || c0 == b'I' {
            if let Some(c) = collector_from_using(msg) {
                o.unified_mode = true;
                let cur = &*o.collector;
                if (cur == "unknown" || cur == "zgc" || c != "zgc") && !(cur == "zgc-generational" && c == "zgc") {
                    o.collector = Arc::from(c);
                }
                return IGNORED;
            }
        }
        if c0 == b'H' {
            if let Some(rm) = r.region_size.captures(msg) {
                if let Some(kb) = size_kb(&rm[1]) {
                    self.region_kb = Some(kb);
                }
                return IGNORED;
            }
        }
        if c0 == b'P' && msg.starts_with("Promotion failed") {
            for st in self.states.iter_mut() {
                if st.pause_line != 0 && !st.flags.contains(&"promotion-failed") {
                    st.flags.push("promotion-failed");
                }
            }
            return IGNORED;
        }
        if c0 == b'T' && msg.starts_with("Trigger") {
            self.trigger = Some(match msg.split_once(':') {
                Some((_, b)) => strip(b).into(),
                None => msg.into(),
            });
            return IGNORED;
        }
        if self.exit_block {
            return IGNORED; // heap summary / statistics block (multi-line)
        }
        let rs = rstrip(msg);
        if rs == "Heap"
            || rs == "GC STATISTICS:"
            || msg.starts_with("All times are wall-clock")
            || msg.starts_with("=== Garbage Collection Statistics")
        {
            self.exit_block = true;
            return IGNORED;
        }
        if r.info_line.is_match(msg) {
            return IGNORED;
        }
        if (d.is_some() || o.unified_mode) && r.generic_info.is_match(msg) {
            return IGNORED;
        }
        UNKNOWN
    }

    // -- per GC id state ---------------------------------------------------------------------

    pub fn find(&self, gc_id: &PyInt) -> Option<usize> {
        self.states.iter().position(|s| &s.gc_id.0 == gc_id)
    }

    /// `_state`: the state of `gc_id`, created if needed (bounded).
    pub fn state(&mut self, o: &mut Owner, gc_id: &PyInt, line_no: u64, ts: Option<Ts>) -> usize {
        if let Some(i) = self.find(gc_id) {
            return i;
        }
        self.states.push(GcState::new(gc_id.clone(), line_no, ts));
        if self.states.len() > 64 {
            // bound memory on logs with unfinished ids
            let shen = self.shen_open.clone();
            let idle: Vec<PyInt> = self
                .states
                .iter()
                .filter(|s| &s.gc_id.0 != gc_id && Some(&s.gc_id.0) != shen.as_ref() && !s.open())
                .map(|s| s.gc_id.0.clone())
                .collect();
            for id in idle {
                self.drop_state(o, &id);
            }
            if self.states.len() > 1024 {
                // pathological: many never-finished events
                let mut ids: Vec<PyInt> = self.states.iter().map(|s| s.gc_id.0.clone()).collect();
                ids.sort_by(cmp_ids);
                let n = ids.len() - 512;
                for id in &ids[..n] {
                    self.drop_state(o, id);
                }
            }
        }
        self.find(gc_id).expect("state just created")
    }

    fn drop_state(&mut self, o: &mut Owner, gc_id: &PyInt) {
        if let Some(i) = self.find(gc_id) {
            let st = self.states.remove(i);
            if st.open() {
                o.stats.incomplete_events += 1;
            }
        }
    }

    /// `states.get(gc_id) or _state(...)`
    pub fn get_or_state(&mut self, o: &mut Owner, gc_id: &PyInt, line_no: u64, d: Option<&Deco>) -> usize {
        match self.find(gc_id) {
            Some(i) => i,
            None => self.state(o, gc_id, line_no, d.map(|d| d.ts())),
        }
    }

    pub fn maybe_forget(&mut self, idx: usize) {
        let st = &self.states[idx];
        if st.phases.is_empty()
            && st.cycle.is_none()
            && st.pause_line == 0
            && self.shen_open.as_ref() != Some(&st.gc_id.0)
        {
            self.states.remove(idx);
        }
    }

    // -- end of input ------------------------------------------------------------------------

    pub fn finish(&mut self, o: &mut Owner, out: &mut Out) {
        if let Some(id) = self.shen_open.clone() {
            self.close_shenandoah(o, &id);
        }
        self.flush_ready(out);
        for st in self.states.drain(..) {
            if st.open() {
                o.stats.incomplete_events += 1;
            }
        }
    }
}

/// `_stamp` (unified): uptime, wall clock; the JVM start applies when the wall is unknown.
pub fn stamp(ev: &mut Event, ts: Option<&Ts>) {
    let Some(ts) = ts else { return };
    if let Some(up) = &ts.up {
        ev.uptime_s = Some(up.value());
    }
    if let Some(w) = &ts.wall {
        ev.wall = wall_of_date(w);
    } else if let Some(ms) = &ts.wallms {
        ev.wall = match PyInt::parse(ms) {
            Some(v) => wall_of_epoch_ms(&v),
            None => crate::event::Wall::None,
        };
    }
    ev.wall_from_start = true;
}

/// `collector_from_using`
pub fn collector_from_using(msg: &str) -> Option<&'static str> {
    const USING: [(&str, &str); 8] = [
        ("Using G1", "g1"),
        ("Using Parallel", "parallel"),
        ("Using Serial", "serial"),
        ("Using Concurrent Mark Sweep", "cms"),
        ("Using Shenandoah", "shenandoah"),
        ("Using The Z Garbage Collector", "zgc"),
        ("Initializing The Z Garbage Collector", "zgc"),
        ("Using Epsilon", "unknown"),
    ];
    USING.iter().find(|(p, _)| msg.starts_with(p)).map(|(_, c)| *c)
}
