//! What a unified tag set (`gc,heap`, `safepoint`, `class,load` ...) means to the handler,
//! remembered per distinct tag set.  The map is hashed with a multiply-rotate hash (FxHash's)
//! instead of SipHash: the key is a few bytes, looked up once per decorated line (SipHash
//! cost ~190 instructions a line).  Hash flooding does not apply: at most `MAX` tag sets are
//! kept, and a set not kept is classified again (the same answer, slower).

use crate::unified::plain_res;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// GC output (gc, gc+start, gc+cpu, safepoint ...)
pub const GC: u8 = 0;
/// output of other unified tags (class+load, os+thread, jit ...)
pub const FOREIGN: u8 = 1;
/// gc+init, gc+heap, gc+phases, gc+heap+exit, safepoint+cleanup ...: informational, but for
/// their GC(n) lines (see Unified::decorated_line)
pub const INFO: u8 = 2;

const MAX: usize = 4096;

#[derive(Default)]
pub struct Fx(u64);

impl Fx {
    #[inline(always)]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Default)]
pub struct TagKinds(HashMap<Box<str>, u8, BuildHasherDefault<Fx>>);

impl TagKinds {
    /// GC, FOREIGN or INFO for the tag set `tags`.
    #[inline]
    pub fn kind(&mut self, tags: &str) -> u8 {
        match self.0.get(tags) {
            Some(k) => *k,
            None => self.classify(tags),
        }
    }

    fn classify(&mut self, tags: &str) -> u8 {
        let kind = if !tags.contains("gc") && !tags.contains("safepoint") {
            FOREIGN
        } else if tags.starts_with("safepoint,") || plain_res().info_tags.is_match(tags) {
            INFO
        } else {
            GC
        };
        if self.0.len() < MAX {
            self.0.insert(tags.into(), kind);
        }
        kind
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        let mut t = TagKinds::default();
        for _ in 0..2 {
            assert_eq!(t.kind("gc"), GC);
            assert_eq!(t.kind("gc,start"), GC);
            assert_eq!(t.kind("gc,cpu"), GC);
            assert_eq!(t.kind("safepoint"), GC);
            assert_eq!(t.kind("gc,heap"), INFO); // its GC(n) lines still count (decorated_line)
            assert_eq!(t.kind("gc,init"), INFO);
            assert_eq!(t.kind("gc,heap,exit"), INFO);
            assert_eq!(t.kind("safepoint,cleanup"), INFO);
            assert_eq!(t.kind("class,load"), FOREIGN);
        }
        assert_eq!(t.0.len(), 9);
    }

    #[test]
    fn hash_tells_lengths_apart() {
        let h = |s: &[u8]| {
            let mut f = Fx::default();
            f.write(s);
            f.finish()
        };
        assert_ne!(h(b"gc"), h(b"gc\0"));
        assert_ne!(h(b"gc,heap"), h(b"gc,heap "));
    }
}
