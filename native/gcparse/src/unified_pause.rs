//! Unified pause lines (`Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 3.1ms`): the
//! start line is remembered, the end line makes the event (its type, cause and flags from the
//! name and qualifiers, its sizes from the id's detail lines); a pause run inside another one
//! is absorbed by it.

use crate::core::{Owner, EVENT, UNKNOWN};
use crate::event::Event;
use crate::out::Out;
use crate::pyfns::{rstrip, slug, strip, Kb, PyInt};
use crate::ts::{elapsed_ms, Ts};
use crate::unified::{Deco, Unified};
use crate::unified_gc::with_gen;
use crate::unified_gc_match::{dur_ms, end_of, heap3, quals, res, start_of};
use crate::unified_scan::GcEnd;

/// What a pause's name and qualifiers say.
struct PauseKind<'a> {
    etype: String,
    cause: Option<&'a str>,
    hint: Option<&'static str>,
    flags: Vec<&'static str>,
}

/// The qualifiers: G1 kinds, flags, the first other one is the cause.
fn read_quals<'a>(qs: &[&'a str], k: &mut PauseKind<'a>) -> Option<String> {
    let mut etype = None;
    for &q in qs {
        match q {
            "Normal" | "Concurrent Start" | "Prepare Mixed" | "Mixed" => {
                k.hint = Some("g1");
                match q {
                    "Mixed" => etype = Some("mixed".into()),
                    "Concurrent Start" => k.flags.push("concurrent-start"),
                    "Prepare Mixed" => k.flags.push("prepare-mixed"),
                    _ => {}
                }
            }
            "Evacuation Failure" => k.flags.push("evacuation-failure"),
            "Major" | "Minor" => {}
            _ if k.cause.is_none() => k.cause = Some(q),
            _ => {}
        }
    }
    etype
}

/// The event type of a pause by its name (`etype`: what the qualifiers said of a young one).
fn pause_type(name: &str, etype: Option<String>, gen: Option<char>, collector: &str, k: &mut PauseKind) -> String {
    match name {
        "Young" => etype.unwrap_or_else(|| "young".into()),
        "Full" => "full".into(),
        "Mixed" => {
            k.hint = Some("g1");
            "mixed".into()
        }
        "Initial Mark" if collector == "cms" => "initial-mark".into(),
        "Initial Mark" => {
            // G1 (JDK 9/10): a young pause that starts concurrent marking
            k.hint = Some("g1");
            k.flags.push("concurrent-start");
            "young".into()
        }
        "Remark" => "remark".into(),
        "Cleanup" => {
            k.hint = Some("g1");
            "cleanup".into()
        }
        "Degenerated GC" => {
            k.hint = Some("shenandoah");
            "degenerated".into()
        }
        _ if matches!(name, "Mark Start" | "Mark End" | "Relocate Start") => {
            k.hint = Some(if gen.is_some() { "zgc-generational" } else { "zgc" });
            format!("pause-{}", slug(name))
        }
        _ => {
            // Shenandoah qualifiers like '(unload classes)', '(Global)' are not causes
            k.hint = Some("shenandoah");
            k.cause = None;
            format!("pause-{}", slug(name))
        }
    }
}

fn pause_kind<'a>(name: &str, qs: &[&'a str], gen: Option<char>, collector: &str, flags: Vec<&'static str>) -> PauseKind<'a> {
    let mut k = PauseKind { etype: String::new(), cause: None, hint: None, flags };
    let etype = read_quals(qs, &mut k);
    k.etype = pause_type(name, etype, gen, collector, &mut k);
    if let Some(c) = k.cause {
        if c.contains("Humongous") {
            k.flags.push("humongous");
        }
        if c == "System.gc()" || c == "System" {
            k.flags.push("system-gc");
        }
        if k.hint.is_none() && c.starts_with("G1 ") {
            k.hint = Some("g1");
        }
    }
    k
}

/// Young and old sizes from G1 region counts x region size.
fn region_sizes(ev: &mut Event, regions: &[(Box<str>, PyInt, PyInt)], rk: &Kb) {
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

impl Unified {
    pub(crate) fn pause(
        &mut self, o: &mut Owner, gc_id: PyInt, rest: &str, gen: Option<char>, d: Option<&Deco>, line_no: u64,
        out: &mut Out, raw: &str,
    ) -> u8 {
        let ts = d.map(|d| d.ts());
        let Some(em) = end_of(rest, "Pause ", &res().pause_end) else {
            return self.pause_start(o, gc_id, rest, ts, line_no, out, raw);
        };
        self.flush_ready(out);
        let i = self.get_or_state(o, &gc_id, line_no, d);
        let st = &self.states[i];
        let k = pause_kind(em.name, &quals(em.quals), gen, &o.collector, st.flags.clone());
        let cut = em.heap.map_or(em.dur_start, |h| h.0);
        let phase = with_gen(gen, rstrip(&rest[..cut]));
        let (first_ts, first_line, first_raw) = if st.pause_line != 0 {
            (st.pause_ts.clone(), st.pause_line, st.pause_raw.clone())
        } else {
            (ts.clone(), line_no, Some(raw.into()))
        };
        let mut ev = self.new_event(o, &k.etype, first_ts.as_ref(), first_line, first_raw.as_deref(), k.hint);
        ev.cause = k.cause.map(Into::into);
        let dur = dur_ms(em.dur, em.unit);
        ev.pause_ms = Some(dur);
        ev.duration_ms = Some(dur);
        ev.gc_id = Some(gc_id.clone());
        ev.phase = Some(phase.as_str().into());
        if let Some([b, a, c]) = heap3(&em) {
            ev.heap = [Some(b), Some(a), Some(c)];
        }
        self.state_sizes(i, &mut ev);
        ev.set_flags(&k.flags);
        self.states[i].reset_pause();
        if let Some(j) = self.enclosing_pause(o, &gc_id, first_line, first_ts.as_ref()) {
            self.states[j].nested.push(ev);
            return EVENT;
        }
        self.pause_done(o, i, gc_id, ev, &phase, &em, ts.as_ref());
        EVENT
    }

    /// A pause's start line: remembered in the id's state.
    fn pause_start(
        &mut self, o: &mut Owner, gc_id: PyInt, rest: &str, ts: Option<Ts>, line_no: u64, out: &mut Out, raw: &str,
    ) -> u8 {
        if start_of(rest, "Pause ", &res().pause_start).is_none() {
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
        EVENT
    }

    /// The sizes the id's detail lines gave: generations, G1 regions x region size.
    fn state_sizes(&self, i: usize, ev: &mut Event) {
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
                region_sizes(ev, regions, rk);
            }
        }
    }

    /// A pause that runs inside another one (young collection turning into a full one, CMS
    /// remark with CMSScavengeBeforeRemark) is logged with its own GC id between the start and
    /// end lines of the enclosing pause: that pause's state, if any.
    fn enclosing_pause(&mut self, o: &mut Owner, gc_id: &PyInt, first_line: u64, first_ts: Option<&Ts>) -> Option<usize> {
        let mut outer = None;
        for j in 0..self.states.len() {
            let s2 = &self.states[j];
            if s2.gc_id.0 == *gc_id || s2.pause_line == 0 {
                continue;
            }
            let delta = first_line as i128 - s2.pause_line as i128;
            if !(0..=200).contains(&delta) {
                continue;
            }
            let dd = elapsed_ms(s2.pause_ts.as_ref(), first_ts, o.date_hook.as_ref());
            if dd.map_or(false, |x| x > 1000.0) {
                // a start line whose pause never ended (e.g. cut by log rotation)
                o.stats.incomplete_events += 1;
                self.states[j].reset_pause();
                continue;
            }
            outer = Some(j);
        }
        outer
    }

    /// The pause's event is ready (with the pauses run inside it absorbed).
    fn pause_done(&mut self, o: &mut Owner, i: usize, gc_id: PyInt, mut ev: Event, phase: &str, em: &GcEnd, ts: Option<&Ts>) {
        if !self.states[i].nested.is_empty() {
            let inner = std::mem::take(&mut self.states[i].nested);
            absorb(&mut ev, &inner);
        }
        self.ready.push(ev);
        if &*o.collector == "shenandoah" {
            self.shen_track(o, &gc_id, phase, Some(em), ts, false);
        } else {
            self.maybe_forget(i);
        }
    }
}
