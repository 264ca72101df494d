//! Columnar events: Arrow-layout buffers (validity bitmaps, values, string offsets) that the
//! binding hands to pyarrow (`Array.from_buffers`) without one Python object per event.
//!
//! Values the columns cannot hold exactly -- a wall clock only CPython reads (Wall::Iso,
//! Wall::EpochMs out of range), one derived from the JVM start, sizes and ids that are not
//! plain i64 (Kb::SizeText, Add, Mul, big ints) -- are left null and listed in `patches`;
//! the binding resolves them with the same Python code as the GcEvent path.

use crate::bounds::BlankRun;
use crate::event::{Event, Wall};
use crate::Parser;
use crate::pyfns::{Kb, PyInt};

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
    #[inline]
    pub fn push(&mut self, e: &Event) {
        let row = self.rows;
        self.rows += 1;
        self.flags_buf.clear();
        for (i, f) in e.flags.iter().enumerate() {
            if i > 0 {
                self.flags_buf.push(',');
            }
            self.flags_buf.push_str(f);
        }
        let flags = (!self.flags_buf.is_empty()).then_some(self.flags_buf.as_str());
        let [s0, s1, s2, s3, s4] = &mut self.strs;
        s0.push(Some(&e.event_type));
        s1.push(Some(&e.collector));
        s2.push(e.cause.as_deref());
        s3.push(e.phase.as_deref());
        s4.push(flags);
        let f64s = [e.uptime_s, e.pause_ms, e.concurrent_ms, e.duration_ms, e.user_s, e.sys_s, e.real_s, e.ttsp_ms];
        for k in 0..8 {
            self.f64s[k].push(f64s[k]);
        }
        for (g, gen) in [&e.heap, &e.young, &e.old, &e.meta].into_iter().enumerate() {
            for j in 0..3 {
                let k = g * 3 + j;
                match &gen[j] {
                    Some(Kb::Small(x)) => self.kbs[k].push(Some(*x)),
                    None => self.kbs[k].push(None),
                    Some(other) => {
                        self.kbs[k].push(None);
                        self.patches.push((row, Patch::Kb(k, other.clone())));
                    }
                }
            }
        }
        match &e.gc_id {
            Some(PyInt::Small(x)) => self.gc_id.push(Some(*x)),
            None => self.gc_id.push(None),
            Some(big) => {
                self.gc_id.push(None);
                self.patches.push((row, Patch::GcId(big.clone())));
            }
        }
        self.source_line.push(e.source_line as i64);
        match &e.wall {
            Wall::Micros(us) => self.wall.push(Some(*us)),
            Wall::None if !e.wall_from_start => self.wall.push(None),
            w => {
                self.wall.push(None);
                self.patches.push((row, Patch::Wall(w.clone(), e.uptime_s, e.wall_from_start)));
            }
        }
    }
}

/// Bytes fed at a time on the columnar path: the events of a piece go to the columns at
/// once, so the event vector stays small and in cache (a 16 MB block made it ~50 MB).
const PIECE: usize = 1 << 18;

/// `feed_bytes` (then `end_text` if `end`) with the events appended to `c`; `data` is fed in
/// pieces cut after a newline, which the byte input takes like any other chunking.
pub fn feed_bytes(p: &mut Parser, data: &[u8], end: bool, c: &mut Columns) -> Result<(), BlankRun> {
    let mut out = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let cut = match rest.get(PIECE..).and_then(|t| memchr::memchr(b'\n', t)) {
            Some(i) => PIECE + i + 1,
            None => rest.len(),
        };
        let fed = p.feed_bytes(&rest[..cut], &mut out);
        out.drain(..).for_each(|e| c.push(&e));
        fed?;
        rest = &rest[cut..];
    }
    if end {
        p.end_text(&mut out);
    }
    out.drain(..).for_each(|e| c.push(&e));
    Ok(())
}
