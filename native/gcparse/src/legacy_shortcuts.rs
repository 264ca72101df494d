//! The shortcuts of `LegacyHandler.handle` for the commonest lines (same results as the
//! general path): detail lines of the pending event, the one-line young collection
//! (`_fast_young`, scanned by legacy_fast.rs, read into a `YoungRow`) and the
//! PrintGCApplicationStoppedTime line (`_fast_stopped`).

use crate::core::{Owner, EVENT};
use crate::event::Event;
use crate::fastnum::parse_f64;
use crate::legacy::{g1_detail, gen_collector, legacy_stamp_of, stamp, Legacy, DETAIL_MARKERS};
use crate::legacy_fast::{scan_young, Young};
use crate::legacy_res::{res, top_start};
use crate::out::Out;
use crate::pyfns::{first_is_digit, num, rstrip_nl, strip, PyInt};
use crate::unified::STOPPED_PHASE;
use crate::young::YoungRow;
use regex::Captures;
use std::sync::Arc;

const G1_TYPES: [&str; 6] = ["young", "mixed", "partial", "initial-mark", "to-space exhausted", "to-space overflow"];

/// The flags a cause gives, by (system-gc, humongous).
const CAUSE_FLAGS: [&[&str]; 4] = [&[], &["system-gc"], &["humongous"], &["system-gc", "humongous"]];

/// What `_fast_young` makes of a cause: (the cause, its flags), or None: general path.
pub type FastCause = Option<(Arc<str>, &'static [&'static str])>;

fn fast_cause_of(q: &str) -> FastCause {
    let ql = strip(q);
    let text = format!(" ({q}) ");
    let general = ql.is_empty()
        || G1_TYPES.contains(&ql)
        || ql.ends_with(['K', 'M', 'G', 'B'])
        || ql == "CMS Initial Mark"
        || DETAIL_MARKERS.iter().any(|m| text.contains(m))
        || ["concurrent mode failure", "concurrent mode interrupted", "promotion failed"].iter().any(|m| text.contains(m));
    if general {
        return None;
    }
    let system = ql == "System.gc()" || ql == "System";
    let humongous = ql.contains("Humongous");
    Some((Arc::from(ql), CAUSE_FLAGS[system as usize | (humongous as usize) << 1]))
}

impl Legacy {
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

    fn set_times(&mut self, fm: &Captures) {
        let Some(ev) = self.last_mut() else { return };
        if ev.user_s.is_none() {
            ev.user_s = parse_f64(&fm[1]);
            ev.sys_s = parse_f64(&fm[2]);
            ev.real_s = parse_f64(&fm[3]);
        }
    }

    fn set_g1_detail(&mut self, fm: &Captures) {
        if let Some(ev) = self.last_mut() {
            g1_detail(ev, fm);
        }
    }

    /// The shortcuts for a line while no record or block is open (None: general path).
    pub(crate) fn fast_paths(&mut self, o: &mut Owner, line: &str, line_no: u64, out: &mut Out) -> Option<u8> {
        let c0 = line.as_bytes().first().copied();
        if c0 == Some(b' ') || c0 == Some(b'\t') {
            if self.has_last() || self.detail_depth > 0 {
                return self.indented_detail(line);
            }
        } else if c0 == Some(b'[') && self.has_last() {
            if let Some(code) = self.column0_detail(line) {
                return Some(code);
            }
        }
        if first_is_digit(line) || line.starts_with("[GC") {
            if let Some(fm) = scan_young(line) {
                if let Some(row) = self.fast_young(o, &fm, line, line_no, true) {
                    self.flush(out);
                    self.young = Some(row);
                    return Some(EVENT);
                }
            } else if line.contains("Total time for which") {
                if let Some(fm) = res().fast_stopped.captures(line) {
                    return Some(self.fast_stopped(o, &fm, line_no, out));
                }
            }
        }
        None
    }

    /// An indented detail line of the pending event.
    fn indented_detail(&mut self, line: &str) -> Option<u8> {
        let r = res();
        if let Some(fm) = r.fast_detail.captures(line) {
            return self.label_ok(&fm[1]).then_some(EVENT);
        } else if let Some(fm) = r.fast_times.captures(line) {
            self.set_times(&fm);
            return Some(EVENT);
        } else if let Some(fm) = r.fast_eden.captures(line) {
            self.set_g1_detail(&fm);
            return Some(EVENT);
        }
        None
    }

    /// A detail line at column 0 (JDK 6 G1, '[Times: ...]', '[Eden: ...]').
    fn column0_detail(&mut self, line: &str) -> Option<u8> {
        let r = res();
        if let Some(fm) = r.fast_detail.captures(line) {
            if self.label_ok(&fm[1]) && !top_start(line) {
                return Some(EVENT);
            }
        } else if line.starts_with("[Times: ") {
            let fm = r.fast_times.captures(line)?;
            self.set_times(&fm);
            return Some(EVENT);
        } else if line.starts_with("[Eden: ") {
            let fm = r.fast_eden.captures(line)?;
            self.set_g1_detail(&fm);
            return Some(EVENT);
        }
        None
    }

    fn fast_cause(&mut self, q: &str) -> FastCause {
        if let Some(info) = self.fast_causes.get(q) {
            return info.clone();
        }
        let info = fast_cause_of(q);
        if self.fast_causes.len() < 256 {
            self.fast_causes.insert(q.to_string(), info.clone());
        }
        info
    }

    /// `_fast_young`: a complete one-line young collection (or None: general path).
    pub fn fast_young(&mut self, o: &mut Owner, fm: &Young, line: &str, line_no: u64, track: bool) -> Option<YoungRow> {
        let (cause, flags) = match fm.cause {
            Some(q) => {
                let (c, f) = self.fast_cause(q)?;
                (Some(c), f)
            }
            None => (None, CAUSE_FLAGS[0]),
        };
        let (date, up) = (fm.date, fm.up);
        if (up.is_some() || date.is_some()) && track {
            self.track_prefix(date, up);
        }
        // a value the scanner read exactly, else the text parsed as the general path does
        let v = |i: usize, t: &str| fm.vals[i].or_else(|| parse_f64(t));
        let times = fm.times.map_or([None; 3], |(u, s, r)| [v(2, u), v(3, s), v(4, r)]);
        let uptime = fm.up.map(|u| fm.vals[0].unwrap_or_else(|| num(u)));
        Some(YoungRow {
            collector: o.set_collector_legacy(gen_collector(fm.gen)),
            cause,
            flags,
            pause_ms: v(1, fm.t).unwrap_or(f64::NAN) * 1000.0,
            kb: fm.kb,
            gc_id: fm.gcid.and_then(PyInt::parse),
            stamp: legacy_stamp_of(date, uptime),
            times,
            source_line: line_no,
            raw: o.keep_raw.then(|| rstrip_nl(line).into()),
        })
    }

    /// `_fast_stopped`: a whole PrintGCApplicationStoppedTime line.
    fn fast_stopped(&mut self, o: &mut Owner, fm: &Captures, line_no: u64, out: &mut Out) -> u8 {
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
}
