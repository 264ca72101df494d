//! Shenandoah cycles, synthesised: Shenandoah logs no cycle summary, so a cycle is all the
//! `GC(n)` lines of one GC id, closed when another id starts (or at the end of input).

use crate::core::Owner;
use crate::pyfns::PyInt;
use crate::ts::{elapsed_ms, Ts};
use crate::unified::Unified;
use crate::unified_gc_match::kb;
use crate::unified_scan::GcEnd;

impl Unified {
    /// A pause or phase line of `gc_id` (`name`: its text, `em`: its end if it is one).
    pub(crate) fn shen_track(
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
        if let Some((_, hb, ha, hc)) = em.and_then(|em| em.heap) {
            st.shen_heap = Some((hb.into(), ha.into(), hc.into()));
        }
        if let Some(t) = ts {
            st.last_ts = Some(t.clone());
        }
    }

    /// The cycle of `gc_id` ends: its `concurrent-cycle` event if it had a concurrent phase.
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
}
