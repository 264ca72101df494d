//! The parser (`parser.GcLogParser`): per-line dispatch between the unified and legacy
//! handlers, line accounting, and byte-buffer input split into lines as Python's text
//! files split them (universal newlines: '\n', '\r\n' and '\r' end a line, read as '\n').

use crate::bounds::{BlankRun, LineBounds};
use crate::event::{Event, Stats};
use crate::legacy::Legacy;
use crate::out::{Out, Sink};
use crate::pyfns::is_digit;
use crate::ts::DateHook;
use crate::unified::Unified;
use std::sync::Arc;

pub const EVENT: u8 = 1;
pub const IGNORED: u8 = 2;
pub const UNKNOWN: u8 = 3;
pub const DEFERRED: u8 = 4;

/// What both handlers share (the `owner` of the Python handlers).
pub struct Owner {
    pub collector: Arc<str>,
    pub keep_raw: bool,
    pub stats: Stats,
    pub unified_mode: bool,
    pub date_hook: Option<DateHook>,
}

impl Owner {
    /// UnifiedHandler._collector
    pub fn set_collector_unified(&mut self, hint: Option<&'static str>) -> Arc<str> {
        let c = &*self.collector;
        if let Some(h) = hint {
            if c == "unknown" || (c == "zgc" && h == "zgc-generational") {
                self.collector = Arc::from(h);
            }
        }
        self.collector.clone()
    }
    /// LegacyHandler._collector
    pub fn set_collector_legacy(&mut self, hint: Option<&str>) -> Arc<str> {
        let c = &*self.collector;
        if let Some(h) = hint.filter(|h| !h.is_empty()) {
            if c == "unknown" || (c == "serial" && h == "cms") {
                self.collector = Arc::from(h);
            }
        }
        self.collector.clone()
    }
}

pub struct Parser {
    pub o: Owner,
    pub u: Unified,
    pub l: Legacy,
    line_no: u64,
    n_unified: u64,
    n_legacy: u64,
    finished: bool,
    /// a partial last line of byte input (feed_text), waiting for its end
    partial: String,
    /// the previous chunk ended with '\r': a '\n' starting the next one belongs to it
    cr_pending: bool,
    /// the start of a UTF-8 sequence cut by the end of a byte chunk (feed_bytes)
    utf8_tail: Vec<u8>,
    /// line length and blank-run bounds on byte input (collectors/gc/limits.py), if set
    bounds: Option<LineBounds>,
    /// the events of a unified line while a legacy event is pending (mixed input)
    unified_buf: Vec<Event>,
}

/// Where a UTF-8 sequence cut by the end of `data` starts (data.len() if none): the last
/// non-continuation byte among the last 3, if the bytes from it on are a valid but
/// incomplete sequence.
fn incomplete_tail_start(data: &[u8]) -> usize {
    let n = data.len();
    let Some(p) = (n.saturating_sub(3)..n).rev().find(|&i| data[i] & 0xC0 != 0x80) else { return n };
    match std::str::from_utf8(&data[p..]) {
        Err(e) if e.error_len().is_none() => p,
        _ => n,
    }
}

fn absurd_number(line: &str) -> bool {
    // _ABSURD_NUMBER_RE = r"\d{100}" (unicode digits)
    let mut run = 0;
    for c in line.chars() {
        if crate::pyfns::is_decimal(c) {
            run += 1;
            if run >= 100 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

impl Parser {
    pub fn new(collector: Option<&str>, keep_raw: bool, sample_limit: usize) -> Parser {
        let collector = match collector {
            Some(c) if !c.is_empty() => c,
            _ => "unknown",
        };
        Parser {
            o: Owner {
                collector: Arc::from(collector),
                keep_raw,
                stats: Stats { sample_limit, ..Default::default() },
                unified_mode: false,
                date_hook: None,
            },
            u: Unified::default(),
            l: Legacy::default(),
            line_no: 0,
            n_unified: 0,
            n_legacy: 0,
            finished: false,
            partial: String::new(),
            cr_pending: false,
            utf8_tail: Vec::new(),
            bounds: None,
            unified_buf: Vec::new(),
        }
    }

    /// Bounds on byte input from now on (see bounds.rs): lines cut at `max_line` bytes, an
    /// error after more than `max_blank` blank lines in a row.
    pub fn set_line_bounds(&mut self, max_line: usize, max_blank: u64) {
        self.bounds = Some(LineBounds::new(max_line, max_blank));
    }

    pub fn set_date_hook(&mut self, hook: DateHook) {
        self.o.date_hook = Some(hook);
    }

    fn may_be_decorated(&self, line: &str) -> bool {
        if self.u.layout.is_some() {
            return true;
        }
        match line[1..].chars().next() {
            Some(c) => is_digit(c) || c.is_ascii_lowercase(),
            None => false,
        }
    }

    /// Runs `f` with an `Out` to `sink`; its events are counted in the stats.
    fn emit(&mut self, sink: &mut dyn Sink, f: impl FnOnce(&mut Parser, &mut Out)) {
        let mut out = Out::new(sink);
        f(self, &mut out);
        self.o.stats.events += out.len();
    }

    /// `feed`: one line (with or without its newline); the events it completed go to `sink`.
    pub fn feed(&mut self, line: &str, line_no: Option<u64>, sink: &mut dyn Sink) {
        self.emit(sink, |p, out| p.feed_line(line, line_no, out));
    }

    fn feed_line(&mut self, line: &str, line_no: Option<u64>, out: &mut Out) {
        let line_no = line_no.unwrap_or(self.line_no + 1);
        self.line_no = line_no;
        self.o.stats.lines_total += 1;
        if line.len() > 1000 && line.chars().count() > 1000 && absurd_number(line) {
            // corrupt data: never handed to the handlers (see parser.py)
            self.o.stats.add_unknown(line_no, line.trim_end_matches(['\r', '\n']));
            return;
        }
        let mut code = 0;
        let first = line.as_bytes().first().copied();
        let unified_first = match first {
            None => true,
            Some(b'[') => self.may_be_decorated(line),
            Some(b'G' | b'U' | b'I' | b'S' | b'A') => true,
            _ => false,
        };
        if self.l.rec.is_none()
            && !self.l.heap_block
            && (self.o.unified_mode || self.u.foreign_block || unified_first)
        {
            code = self.unified_line(line, line_no, out);
            if code == EVENT {
                self.o.stats.lines_event += 1;
                return;
            }
        }
        if code == 0 {
            self.u.flush_ready(out);
            code = self.l.handle(&mut self.o, line, line_no, out);
            self.n_legacy += 1;
        }
        match code {
            EVENT => self.o.stats.lines_event += 1,
            IGNORED => self.o.stats.lines_ignored += 1,
            UNKNOWN => self.o.stats.add_unknown(line_no, line.trim_end_matches(['\r', '\n'])),
            _ => {} // DEFERRED: accounted for when the legacy record completes
        }
    }

    /// The unified handler on a line (0: not unified).  A legacy event pending before a
    /// unified line (mixed input) is emitted before the line's events.
    fn unified_line(&mut self, line: &str, line_no: u64, out: &mut Out) -> u8 {
        if !self.l.has_last() {
            let code = self.u.handle(&mut self.o, line, line_no, out);
            self.n_unified += (code != 0) as u64;
            return code;
        }
        let mut buf = std::mem::take(&mut self.unified_buf);
        let code = self.u.handle(&mut self.o, line, line_no, &mut Out::new(&mut buf));
        if code != 0 {
            self.n_unified += 1;
            self.l.flush(out);
        }
        buf.drain(..).for_each(|e| out.push(e));
        self.unified_buf = buf;
        code
    }

    /// Text input of any chunking: complete lines are fed, a partial last line waits.
    /// A line ending in '\n' inside the chunk is fed in place (no copy); only lines that
    /// straddle chunks or end in '\r' are assembled in `partial`.
    pub fn feed_text(&mut self, text: &str, sink: &mut dyn Sink) {
        self.emit(sink, |p, out| p.text(text, out));
    }

    fn text(&mut self, text: &str, out: &mut Out) {
        let mut rest = text;
        if self.cr_pending {
            self.cr_pending = false;
            if let Some(r) = rest.strip_prefix('\n') {
                rest = r; // the '\n' of a '\r\n' split between chunks
            }
        }
        while let Some(i) = memchr::memchr2(b'\n', b'\r', rest.as_bytes()) {
            let is_cr = rest.as_bytes()[i] == b'\r';
            if !is_cr && self.partial.is_empty() {
                self.feed_line(&rest[..=i], None, out);
                rest = &rest[i + 1..];
                continue;
            }
            let mut line = std::mem::take(&mut self.partial);
            line.push_str(&rest[..i]);
            line.push('\n');
            let mut next = i + 1;
            if is_cr {
                if next < rest.len() {
                    if rest.as_bytes()[next] == b'\n' {
                        next += 1;
                    }
                } else {
                    self.cr_pending = true;
                }
            }
            self.feed_line(&line, None, out);
            self.partial = line; // keep the allocation
            self.partial.clear();
            rest = &rest[next..];
        }
        self.partial.push_str(rest);
    }

    /// Raw bytes of any chunking, decoded as Python's `errors="replace"` does; a UTF-8
    /// sequence cut by the chunk end waits for the next chunk. With line bounds set, lines are
    /// cut first, and a blank run beyond them is an error (nothing of `data` is fed then).
    pub fn feed_bytes(&mut self, data: &[u8], sink: &mut dyn Sink) -> Result<(), BlankRun> {
        let bounded = match self.bounds.as_mut() {
            None => std::borrow::Cow::Borrowed(data),
            Some(b) => b.apply(data)?,
        };
        self.emit(sink, |p, out| p.raw(&bounded, out));
        Ok(())
    }

    fn raw(&mut self, data: &[u8], out: &mut Out) {
        let joined;
        let data = if self.utf8_tail.is_empty() {
            data
        } else {
            joined = [std::mem::take(&mut self.utf8_tail).as_slice(), data].concat();
            &joined[..]
        };
        match std::str::from_utf8(data) {
            Ok(text) => self.text(text, out), // one validation, no copy (the usual case)
            Err(e) => {
                let cut = if e.error_len().is_none() { e.valid_up_to() } else { incomplete_tail_start(data) };
                self.utf8_tail.extend_from_slice(&data[cut..]);
                self.text(&String::from_utf8_lossy(&data[..cut]), out);
            }
        }
    }

    /// End of text input: a last line without newline is fed.
    pub fn end_text(&mut self, sink: &mut dyn Sink) {
        self.emit(sink, |p, out| {
            if !p.utf8_tail.is_empty() {
                let tail = std::mem::take(&mut p.utf8_tail);
                p.text(&String::from_utf8_lossy(&tail), out);
            }
            if !p.partial.is_empty() {
                let line = std::mem::take(&mut p.partial);
                p.feed_line(&line, None, out);
            }
            p.cr_pending = false;
        });
    }

    /// `flush`: events complete but held back for optional trailing lines.
    pub fn flush(&mut self, sink: &mut dyn Sink) {
        self.emit(sink, |p, out| {
            p.l.flush(out);
            p.u.flush_ready(out);
        });
    }

    /// `finish`: end of input (incomplete events are counted, not emitted).
    pub fn finish(&mut self, sink: &mut dyn Sink) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.emit(sink, |p, out| {
            p.l.finish(&mut p.o, out);
            p.u.finish(&mut p.o, out);
        });
    }

    pub fn formats(&self) -> (u64, u64) {
        (self.n_unified, self.n_legacy)
    }

    /// `time_span`: probe events stamped with the first and last time-stamped lines.
    pub fn time_span(&self) -> Option<(Event, Event)> {
        let us = self.u.span().map(|(a, b)| {
            let mut ea = Event::new("x", self.o.collector.clone(), 0);
            let mut eb = ea.clone();
            crate::unified::stamp(&mut ea, a.as_ref());
            crate::unified::stamp(&mut eb, b.as_ref());
            (ea, eb)
        });
        let ls = self.l.span(&self.o);
        match (us, ls) {
            (Some(u), Some(l)) => Some(if self.n_unified >= self.n_legacy { u } else { l }),
            (u, l) => u.or(l),
        }
    }
}
