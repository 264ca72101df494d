//! Unified concurrent lines (`Concurrent Mark 12.3ms`): a phase's start line is remembered and
//! its end line makes the event (unless it is a sub-phase of another); G1's cycle lines make
//! the `concurrent-cycle` event; an aborted mark is emitted with the time it ran.

use crate::core::{Owner, EVENT, UNKNOWN};
use crate::out::Out;
use crate::pyfns::{rstrip, slug, strip, PyInt};
use crate::ts::{elapsed_ms, Ts};
use crate::unified::{Deco, Phase, Unified};
use crate::unified_gc::with_gen;
use crate::unified_gc_match::{dur_ms, end_of, heap3, res, start_of};
use crate::unified_scan::GcEnd;

const ZGC_SUBPHASES: [&str; 18] = [
    "Mark Roots", "Mark Follow", "Relocate Remset FP", "References Process", "References Enqueue",
    "Classes Unlink", "Classes Purge", "Mark Root Colored", "Mark Root Uncolored",
    "Roots OopStorageSet", "Weak Roots OopStorageSet", "Roots ClassLoaderDataGraph",
    "Roots CodeCache", "Roots JavaThreads", "Remap Roots Colored", "Remap Roots Uncolored",
    "Remap Remembered", "Mark Continue",
];

fn is_cycle(name: &str) -> bool {
    matches!(name, "Cycle" | "Mark Cycle" | "Undo Cycle")
}

impl Unified {
    pub(crate) fn concurrent(
        &mut self, o: &mut Owner, gc_id: PyInt, rest: &str, gen: Option<char>, d: Option<&Deco>, line_no: u64,
        out: &mut Out, raw: &str,
    ) -> u8 {
        let ts = d.map(|d| d.ts());
        let Some(em) = end_of(rest, "Concurrent ", &res().conc_end) else {
            return self.concurrent_start(o, gc_id, rest, ts, line_no, out, raw);
        };
        self.flush_ready(out);
        let i = self.get_or_state(o, &gc_id, line_no, d);
        if is_cycle(em.name) {
            self.cycle_end(o, i, gc_id, &em, ts, line_no, raw);
            return EVENT;
        }
        // match the open start line of this phase (if any)
        let st = &mut self.states[i];
        let start = st.phases.iter().rposition(|p| &*p.name == em.name).map(|k| st.phases.remove(k));
        let sub = self.sub_phase(i, em.name, d.and_then(|d| d.level()));
        if &*o.collector == "shenandoah" {
            self.shen_track(o, &gc_id, strip(rest), Some(&em), ts.as_ref(), true);
        }
        if !sub {
            let (sts, sline, sraw) = match start {
                Some(p) => (p.ts, p.line, p.raw),
                None => (ts, line_no, Some(raw.into())),
            };
            self.phase_end(o, gc_id, rest, &em, gen, sts, sline, sraw);
        }
        EVENT
    }

    /// A start line: a G1 cycle's, a mark abort, or a phase's (remembered in the id's state).
    fn concurrent_start(
        &mut self, o: &mut Owner, gc_id: PyInt, rest: &str, ts: Option<Ts>, line_no: u64, out: &mut Out, raw: &str,
    ) -> u8 {
        let r = res();
        let Some(sm) = start_of(rest, "Concurrent ", &r.conc_start) else {
            return if r.gc_detail.is_match(rest) { EVENT } else { UNKNOWN };
        };
        self.flush_ready(out);
        let i = self.state(o, &gc_id, line_no, ts.clone());
        let keep = if o.keep_raw { Some(raw.into()) } else { None };
        if is_cycle(sm.name) {
            self.states[i].cycle = Some((ts, line_no, keep));
            o.set_collector_unified(Some("g1"));
        } else if sm.name == "Mark Abort" {
            self.mark_abort(o, i, &gc_id, ts.as_ref());
        } else {
            self.states[i].phases.push(Phase { name: sm.name.into(), ts: ts.clone(), line: line_no, raw: keep });
            if &*o.collector == "shenandoah" {
                self.shen_track(o, &gc_id, strip(rest), None, ts.as_ref(), true);
            }
        }
        EVENT
    }

    /// The end of a G1 concurrent cycle: its event, from its start line if seen.
    fn cycle_end(&mut self, o: &mut Owner, i: usize, gc_id: PyInt, em: &GcEnd, ts: Option<Ts>, line_no: u64, raw: &str) {
        let st = &mut self.states[i];
        let cyc = st.cycle.take();
        let mut flags = st.cycle_flags.clone();
        if em.name == "Undo Cycle" {
            flags.push("undo");
        }
        let (cts, cline, craw) = match cyc {
            Some((t, l, r)) => (t, l, r),
            None => (ts, line_no, Some(raw.into())),
        };
        let mut ev = self.new_event(o, "concurrent-cycle", cts.as_ref(), cline, craw.as_deref(), Some("g1"));
        ev.duration_ms = Some(dur_ms(em.dur, em.unit));
        ev.gc_id = Some(gc_id);
        ev.phase = Some(format!("Concurrent {}", em.name).into());
        ev.set_flags(&flags);
        let st = &mut self.states[i];
        st.cycle_flags.clear();
        st.phases.clear();
        self.ready.push(ev);
        self.maybe_forget(i);
    }

    /// A phase inside another one (the enclosing phase is the event): another phase of the id
    /// still open, a debug/trace line, or a ZGC sub-phase in a log without levels.
    fn sub_phase(&self, i: usize, name: &str, level: Option<&str>) -> bool {
        if !self.states[i].phases.is_empty() {
            return true;
        }
        match level {
            Some(l) => matches!(strip(l), "debug" | "trace"),
            None => !self.has_level && ZGC_SUBPHASES.contains(&name),
        }
    }

    /// A phase's event, stamped by its start line (`sts`, `sline`, `sraw`) if seen.
    fn phase_end(
        &mut self, o: &mut Owner, gc_id: PyInt, rest: &str, em: &GcEnd, gen: Option<char>, sts: Option<Ts>, sline: u64,
        sraw: Option<Box<str>>,
    ) {
        let cut = em.heap.map_or(em.dur_start, |h| h.0);
        let phase = with_gen(gen, rstrip(&rest[..cut]));
        let hint = if gen.is_some() { Some("zgc-generational") } else { None };
        let etype = format!("concurrent-{}", slug(em.name));
        let mut ev = self.new_event(o, &etype, sts.as_ref(), sline, sraw.as_deref(), hint);
        let dur = dur_ms(em.dur, em.unit);
        ev.concurrent_ms = Some(dur);
        ev.duration_ms = Some(dur);
        ev.gc_id = Some(gc_id);
        ev.phase = Some(phase.into());
        if let Some([b, a, c]) = heap3(em) {
            ev.heap = [Some(b), Some(a), Some(c)];
        }
        self.ready.push(ev);
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
}
