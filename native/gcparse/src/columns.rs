//! Columnar events: Arrow-layout buffers (validity bitmaps, values, string offsets) that the
//! binding hands to pyarrow (`Array.from_buffers`) without one Python object per event.
//!
//! Values the columns cannot hold exactly -- a wall clock only CPython reads (Wall::Iso,
//! Wall::EpochMs out of range), one derived from the JVM start, sizes and ids that are not
//! plain i64 (Kb::SizeText, Add, Mul, big ints) -- are left null and listed in `patches`;
//! the binding resolves them with the same Python code as the GcEvent path.

use crate::bounds::BlankRun;
use crate::event::{Event, Wall};
use crate::out::Sink;
use crate::pyfns::{Kb, PyInt};
use crate::young::{self, YoungRow};
use crate::Parser;

/// Arrow validity bitmap + values of one fixed-width column.
#[derive(Default)]
pub struct Fixed<T> {
    pub valid: Vec<u8>,
    pub values: Vec<T>,
    pub nulls: usize,
}

impl<T: Copy + Default> Fixed<T> {
    #[inline(always)]
    fn push(&mut self, v: Option<T>) {
        let i = self.values.len();
        if i % 8 == 0 {
            self.valid.push(0);
        }
        let (x, ok) = match v {
            Some(x) => (x, 1u8),
            None => (T::default(), 0),
        };
        self.values.push(x);
        if let Some(last) = self.valid.last_mut() {
            *last |= ok << (i % 8);
        }
        self.nulls += (ok ^ 1) as usize;
    }
}

/// Arrow `string` column: validity, i32 offsets, UTF-8 data.
pub struct Strs {
    pub valid: Vec<u8>,
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
    pub nulls: usize,
}

impl Default for Strs {
    fn default() -> Self {
        Strs { valid: Vec::new(), offsets: vec![0], data: Vec::new(), nulls: 0 }
    }
}

impl Strs {
    #[inline(always)]
    fn push(&mut self, v: Option<&str>) {
        let i = self.offsets.len() - 1;
        if i % 8 == 0 {
            self.valid.push(0);
        }
        match v {
            Some(s) => {
                self.valid[i / 8] |= 1 << (i % 8);
                self.data.extend_from_slice(s.as_bytes());
            }
            None => self.nulls += 1,
        }
        self.offsets.push(self.data.len() as i32);
    }
}

pub const F64_NAMES: [&str; 8] =
    ["uptime_s", "pause_ms", "concurrent_ms", "duration_ms", "user_s", "sys_s", "real_s", "ttsp_ms"];
pub const KB_NAMES: [&str; 12] = [
    "heap_before_kb", "heap_after_kb", "heap_committed_kb", "young_before_kb", "young_after_kb",
    "young_committed_kb", "old_before_kb", "old_after_kb", "old_committed_kb",
    "metaspace_before_kb", "metaspace_after_kb", "metaspace_committed_kb",
];
pub const STR_NAMES: [&str; 5] = ["event_type", "collector", "cause", "phase", "flags"];

/// A value the binding computes in Python: (row, what).
#[derive(Debug, PartialEq)]
pub enum Patch {
    Wall(Wall, Option<f64>, bool),
    Kb(usize, Kb),
    GcId(PyInt),
}

#[derive(Default)]
pub struct Columns {
    pub rows: usize,
    pub strs: [Strs; 5],
    pub f64s: [Fixed<f64>; 8],
    pub kbs: [Fixed<i64>; 12],
    pub gc_id: Fixed<i64>,
    pub source_line: Vec<i64>,
    /// wall clock, microseconds since the epoch (UTC)
    pub wall: Fixed<i64>,
    pub patches: Vec<(usize, Patch)>,
    flags_buf: String,
}

impl Columns {
    /// A row of `e`.
    pub fn push(&mut self, e: &Event) {
        let row = self.next_row();
        self.push_texts(&e.event_type, &e.collector, e.cause.as_deref(), e.phase.as_deref(), &e.flags);
        self.push_f64s([e.uptime_s, e.pause_ms, e.concurrent_ms, e.duration_ms, e.user_s, e.sys_s, e.real_s, e.ttsp_ms]);
        for (g, gen) in [&e.heap, &e.young, &e.old, &e.meta].into_iter().enumerate() {
            for (j, v) in gen.iter().enumerate() {
                self.push_kb(row, g * 3 + j, v);
            }
        }
        self.push_gc_id(row, &e.gc_id);
        self.source_line.push(e.source_line as i64);
        self.push_wall(row, &e.wall, e.uptime_s, e.wall_from_start);
    }

    /// The row `push(&y.into_event())` would write, without the event.
    pub fn push_young(&mut self, y: &YoungRow) {
        let row = self.next_row();
        self.push_texts(young::EVENT_TYPE, &y.collector, y.cause.as_deref(), Some(young::PHASE), y.flags);
        let [user, sys, real] = y.times;
        let up = y.stamp.uptime_s;
        self.push_f64s([up, Some(y.pause_ms), None, Some(y.pause_ms), user, sys, real, None]);
        // heap, young: plain numbers; old, metaspace: none
        for (k, x) in y.kb.iter().enumerate() {
            self.kbs[k].push(Some(*x));
        }
        self.kbs[6..].iter_mut().for_each(|c| c.push(None));
        self.push_gc_id(row, &y.gc_id);
        self.source_line.push(y.source_line as i64);
        self.push_wall(row, &y.stamp.wall, up, y.stamp.wall_from_start);
    }

    #[inline(always)]
    fn next_row(&mut self) -> usize {
        self.rows += 1;
        self.rows - 1
    }

    #[inline(always)]
    fn push_texts(&mut self, event_type: &str, collector: &str, cause: Option<&str>, phase: Option<&str>, flags: &[&str]) {
        self.flags_buf.clear();
        for (i, f) in flags.iter().enumerate() {
            if i > 0 {
                self.flags_buf.push(',');
            }
            self.flags_buf.push_str(f);
        }
        let flags = (!self.flags_buf.is_empty()).then_some(self.flags_buf.as_str());
        let [s0, s1, s2, s3, s4] = &mut self.strs;
        s0.push(Some(event_type));
        s1.push(Some(collector));
        s2.push(cause);
        s3.push(phase);
        s4.push(flags);
    }

    #[inline(always)]
    fn push_f64s(&mut self, v: [Option<f64>; 8]) {
        for (c, x) in self.f64s.iter_mut().zip(v) {
            c.push(x);
        }
    }

    #[inline(always)]
    fn push_kb(&mut self, row: usize, k: usize, v: &Option<Kb>) {
        match v {
            Some(Kb::Small(x)) => self.kbs[k].push(Some(*x)),
            None => self.kbs[k].push(None),
            Some(other) => {
                self.kbs[k].push(None);
                self.patches.push((row, Patch::Kb(k, other.clone())));
            }
        }
    }

    #[inline(always)]
    fn push_gc_id(&mut self, row: usize, v: &Option<PyInt>) {
        match v {
            Some(PyInt::Small(x)) => self.gc_id.push(Some(*x)),
            None => self.gc_id.push(None),
            Some(big) => {
                self.gc_id.push(None);
                self.patches.push((row, Patch::GcId(big.clone())));
            }
        }
    }

    #[inline(always)]
    fn push_wall(&mut self, row: usize, wall: &Wall, uptime_s: Option<f64>, from_start: bool) {
        match wall {
            Wall::Micros(us) => self.wall.push(Some(*us)),
            Wall::None if !from_start => self.wall.push(None),
            w => {
                self.wall.push(None);
                self.patches.push((row, Patch::Wall(w.clone(), uptime_s, from_start)));
            }
        }
    }
}

/// The columnar path's sink: every event becomes a row as soon as the parser completes it.
impl Sink for Columns {
    #[inline]
    fn event(&mut self, e: Event) {
        self.push(&e);
    }
    #[inline]
    fn young(&mut self, y: YoungRow) {
        self.push_young(&y);
    }
}

/// `feed_bytes` (then `end_text` if `end`) with the events written to `c`.
pub fn feed_bytes(p: &mut Parser, data: &[u8], end: bool, c: &mut Columns) -> Result<(), BlankRun> {
    p.feed_bytes(data, c)?;
    if end {
        p.end_text(c);
    }
    Ok(())
}
