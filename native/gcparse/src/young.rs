//! `YoungRow`: the event of a one-line young collection (`_fast_young`, most of a legacy
//! CMS/serial/parallel log) in compact form, as `Legacy::fast_young` reads it.  The GcEvent
//! path turns it into an `Event` (`into_event`); the columnar path writes its fields straight
//! into the Arrow columns (`Columns::push_young`) without building the ~680-byte `Event`.

use crate::event::{plausible, Event, Stamp, MAX_PLAUSIBLE_MS, MAX_PLAUSIBLE_S};
use crate::pyfns::{Kb, PyInt};
use crate::sstr::SStr;
use std::sync::Arc;

pub const EVENT_TYPE: &str = "young";
pub const PHASE: &str = "GC";

pub struct YoungRow {
    pub collector: Arc<str>,
    pub cause: Option<Arc<str>>,
    pub flags: &'static [&'static str],
    /// pause_ms, which is also duration_ms
    pub pause_ms: f64,
    /// heap before, after, committed; young generation before, after, committed (KB)
    pub kb: [i64; 6],
    pub gc_id: Option<PyInt>,
    pub stamp: Stamp,
    /// user, sys, real seconds
    pub times: [Option<f64>; 3],
    pub source_line: u64,
    pub raw: Option<Box<str>>,
}

impl YoungRow {
    /// No value drop_implausible would drop.
    #[inline]
    pub fn plausible(&self) -> bool {
        plausible(Some(self.pause_ms), MAX_PLAUSIBLE_MS) && self.times.iter().all(|t| plausible(*t, MAX_PLAUSIBLE_S))
    }

    pub fn into_event(self) -> Event {
        let mut ev = Event::new(EVENT_TYPE, self.collector, self.source_line);
        ev.cause = self.cause.as_deref().map(SStr::new);
        ev.pause_ms = Some(self.pause_ms);
        ev.duration_ms = Some(self.pause_ms);
        let kb = self.kb.map(|x| Some(Kb::Small(x)));
        ev.heap = [kb[0].clone(), kb[1].clone(), kb[2].clone()];
        ev.young = [kb[3].clone(), kb[4].clone(), kb[5].clone()];
        ev.flags = self.flags.to_vec();
        ev.phase = Some(PHASE.into());
        ev.gc_id = self.gc_id;
        ev.set_stamp(self.stamp);
        [ev.user_s, ev.sys_s, ev.real_s] = self.times;
        ev.raw = self.raw;
        ev
    }
}
