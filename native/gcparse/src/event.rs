//! GcEvent and ParseStats of the native core (model.py is the reference).

use crate::pyfns::{Kb, PyInt};
use crate::sstr::SStr;
use std::sync::Arc;

/// Wall clock of an event, resolved to a Python datetime by the binding.
#[derive(Clone, Debug, PartialEq)]
pub enum Wall {
    None,
    /// microseconds since the epoch, UTC
    Micros(i64),
    /// a date stamp only CPython's datetime.fromisoformat reads exactly (rare shapes)
    Iso(Box<str>),
    /// epoch milliseconds out of the range where the fast conversion is exact
    EpochMs(PyInt),
}

/// The time fields of an event: uptime, wall clock, and whether the wall clock is to be
/// derived from the JVM start.
#[derive(Clone, Debug, PartialEq)]
pub struct Stamp {
    pub uptime_s: Option<f64>,
    pub wall: Wall,
    pub wall_from_start: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub event_type: SStr,
    pub collector: Arc<str>,
    pub wall: Wall,
    /// `wall_time is None and jvm_start`: derive the wall clock from the JVM start (unified
    /// rule; the legacy rule only when the line has no date stamp at all)
    pub wall_from_start: bool,
    pub uptime_s: Option<f64>,
    pub cause: Option<SStr>,
    pub pause_ms: Option<f64>,
    pub concurrent_ms: Option<f64>,
    pub duration_ms: Option<f64>,
    pub heap: [Option<Kb>; 3],
    pub young: [Option<Kb>; 3],
    pub old: [Option<Kb>; 3],
    pub meta: [Option<Kb>; 3],
    pub user_s: Option<f64>,
    pub sys_s: Option<f64>,
    pub real_s: Option<f64>,
    pub gc_id: Option<PyInt>,
    pub flags: Vec<&'static str>,
    pub phase: Option<SStr>,
    pub ttsp_ms: Option<f64>,
    pub source_line: u64,
    pub raw: Option<Box<str>>,
}

impl Event {
    pub fn new(event_type: impl Into<SStr>, collector: Arc<str>, source_line: u64) -> Event {
        Event {
            event_type: event_type.into(),
            collector,
            wall: Wall::None,
            wall_from_start: false,
            uptime_s: None,
            cause: None,
            pause_ms: None,
            concurrent_ms: None,
            duration_ms: None,
            heap: [None, None, None],
            young: [None, None, None],
            old: [None, None, None],
            meta: [None, None, None],
            user_s: None,
            sys_s: None,
            real_s: None,
            gc_id: None,
            flags: Vec::new(),
            phase: None,
            ttsp_ms: None,
            source_line,
            raw: None,
        }
    }

    pub fn set_stamp(&mut self, s: Stamp) {
        self.uptime_s = s.uptime_s;
        self.wall = s.wall;
        self.wall_from_start = s.wall_from_start;
    }

    /// `tuple(dict.fromkeys(flags))`
    pub fn set_flags(&mut self, flags: &[&'static str]) {
        self.flags.clear();
        for f in flags {
            if !self.flags.contains(f) {
                self.flags.push(f);
            }
        }
    }
}

/// No JVM pause, phase or cycle lasts 30 days (model.MAX_PLAUSIBLE_MS).
pub const MAX_PLAUSIBLE_MS: f64 = 30.0 * 24.0 * 3600.0 * 1000.0;

/// Seconds of CPU or real time: the same bound as for milliseconds.
pub const MAX_PLAUSIBLE_S: f64 = MAX_PLAUSIBLE_MS / 1000.0;

/// A value drop_implausible keeps.
#[inline]
pub fn plausible(v: Option<f64>, max: f64) -> bool {
    v.map_or(true, |x| 0.0 <= x && x <= max)
}

fn implausible(v: &mut Option<f64>, max: f64) -> bool {
    if plausible(*v, max) {
        return false;
    }
    *v = None;
    true
}

/// model.drop_implausible
pub fn drop_implausible(events: &mut [Event]) {
    for e in events.iter_mut() {
        let mut bad = false;
        for v in [&mut e.pause_ms, &mut e.concurrent_ms, &mut e.duration_ms, &mut e.ttsp_ms] {
            bad |= implausible(v, MAX_PLAUSIBLE_MS);
        }
        for v in [&mut e.user_s, &mut e.sys_s, &mut e.real_s] {
            bad |= implausible(v, MAX_PLAUSIBLE_S);
        }
        if bad {
            e.flags.push("implausible-value");
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub lines_total: u64,
    pub lines_event: u64,
    pub lines_ignored: u64,
    pub lines_unknown: u64,
    pub events: u64,
    pub incomplete_events: u64,
    pub unknown_sample: Vec<(u64, String)>,
    pub sample_limit: usize,
}

impl Stats {
    pub fn add_unknown(&mut self, line_no: u64, text: &str) {
        self.lines_unknown += 1;
        if self.unknown_sample.len() < self.sample_limit {
            // text[:500]: 500 characters
            let cut = text.char_indices().nth(500).map_or(text.len(), |(i, _)| i);
            self.unknown_sample.push((line_no, text[..cut].to_string()));
        }
    }
}
