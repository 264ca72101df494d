//! ZGC cycle lines (`Garbage Collection (Warmup) 14M(1%)->8M(0%)`, generational ZGC's
//! `Major`/`Minor Collection` and its `Young`/`Old Generation` summaries): the start line is
//! remembered, the end line makes the `concurrent-cycle` event.

use crate::core::{Owner, EVENT, UNKNOWN};
use crate::out::Out;
use crate::pyfns::{num, rstrip, PyInt};
use crate::ts::{elapsed_ms, Ts};
use crate::unified::{Deco, Unified};
use crate::unified_gc_match::{kb, quals, zcycle_of, zgen_of};
use crate::unified_scan::ZCycle;

impl Unified {
    pub(crate) fn zcycle(
        &mut self, o: &mut Owner, gc_id: PyInt, rest: &str, d: Option<&Deco>, line_no: u64, out: &mut Out,
        raw: &str,
    ) -> u8 {
        let ts = d.map(|d| d.ts());
        let zc = zcycle_of(rest);
        self.flush_ready(out);
        let Some(zc) = zc else { return UNKNOWN };
        if zc.end.is_none() {
            let i = self.state(o, &gc_id, line_no, ts.clone());
            let keep = if o.keep_raw { Some(raw.into()) } else { None };
            self.states[i].cycle = Some((ts, line_no, keep));
            let h = if zc.name != "Garbage" { "zgc-generational" } else { "zgc" };
            o.set_collector_unified(Some(h));
            return EVENT;
        }
        let i = self.get_or_state(o, &gc_id, line_no, d);
        self.zcycle_end(o, i, gc_id, rest, &zc, ts, line_no, raw);
        EVENT
    }

    /// The cycle's event, stamped by its start line if seen.
    fn zcycle_end(
        &mut self, o: &mut Owner, i: usize, gc_id: PyInt, rest: &str, zc: &ZCycle, ts: Option<Ts>, line_no: u64,
        raw: &str,
    ) {
        let Some((hb_at, hb, ha, zdur)) = zc.end else { return };
        let qs = quals(zc.quals);
        let hint = if zc.name == "Garbage" { "zgc" } else { "zgc-generational" };
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
    }

    /// 'Y: Young Generation 14M(1%)->8M(0%) 0.012s': a generation's sizes in the cycle.
    pub(crate) fn zgen_line(&mut self, o: &mut Owner, gc_id: &PyInt, rest: &str, d: Option<&Deco>, line_no: u64) -> u8 {
        let i = self.state(o, gc_id, line_no, d.map(|d| d.ts()));
        if let Some((zname, hb, ha)) = zgen_of(rest) {
            let v = (kb(hb), kb(ha));
            if zname == "Young" {
                self.states[i].zgen_young = Some(v);
            } else {
                self.states[i].zgen_old = Some(v);
            }
        }
        o.set_collector_unified(Some("zgc-generational"));
        EVENT
    }
}
