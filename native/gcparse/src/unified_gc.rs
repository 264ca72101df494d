//! Unified `GC(n)` lines (`UnifiedHandler._gc_line`): which kind of line it is, and the detail
//! lines of a GC id (CPU times, generation and region sizes, failure markers).  Pauses are in
//! unified_pause.rs, concurrent phases in unified_concurrent.rs, ZGC cycles in
//! unified_zgc.rs, Shenandoah cycles in unified_shenandoah.rs; the patterns in
//! unified_gc_match.rs.

use crate::core::{Owner, EVENT, UNKNOWN};
use crate::out::Out;
use crate::pyfns::{is_alpha, num, PyInt};
use crate::unified::{Deco, Unified};
use crate::unified_gc_match::{cpu_of, gen_of, kb, regions_of, res};

const GEN_KEYS: [&str; 9] = ["DefNew", "Tenured", "PSYoungGen", "ParOldGen", "PSOldGen", "ParNew", "CMS", "Metaspace", "Perm"];

fn gen_hint(g: &str) -> Option<&'static str> {
    Some(match g {
        "DefNew" | "Tenured" => "serial",
        "PSYoungGen" | "ParOldGen" | "PSOldGen" => "parallel",
        "ParNew" | "CMS" => "cms",
        _ => return None,
    })
}

/// The phase text, with the generation prefix of generational ZGC if any.
pub fn with_gen(gen: Option<char>, phase: &str) -> String {
    match gen {
        Some(g) => format!("{g}: {phase}"),
        None => phase.to_string(),
    }
}

/// The generation prefix of generational ZGC ('Y: ', 'y: ', 'O: ') and the message after it;
/// None for an indented detail line.
fn gen_prefix(rest: &str) -> Option<(Option<char>, &str)> {
    let c = rest.chars().next().filter(|&c| c != ' ')?;
    if (c == 'Y' || c == 'y' || c == 'O') && rest[1..].starts_with(": ") {
        let rest = &rest[3..];
        return (!rest.is_empty() && !rest.starts_with(' ')).then_some((Some(c), rest));
    }
    Some((None, rest))
}

impl Unified {
    pub fn gc_line(
        &mut self, o: &mut Owner, gc_id: PyInt, rest: &str, d: Option<&Deco>, line_no: u64, out: &mut Out,
        raw: &str,
    ) -> u8 {
        let Some((gen, rest)) = gen_prefix(rest) else { return EVENT }; // indented detail lines
        let c0 = rest.chars().next().unwrap();
        if c0 == 'P' && rest.starts_with("Pause ") {
            return self.pause(o, gc_id, rest, gen, d, line_no, out, raw);
        }
        if c0 == 'C' && rest.starts_with("Concurrent ") {
            return self.concurrent(o, gc_id, rest, gen, d, line_no, out, raw);
        }
        if c0 == 'C' && rest.starts_with("Coalescing and filling") {
            let text = format!("Concurrent {rest}");
            return self.concurrent(o, gc_id, &text, gen, d, line_no, out, raw);
        }
        if c0 == 'U' && rest.starts_with("User=") {
            return self.cpu_line(&gc_id, rest, out);
        }
        if gen.is_none() && ["Garbage Collection", "Major Collection", "Minor Collection"].iter().any(|p| rest.starts_with(p)) {
            return self.zcycle(o, gc_id, rest, d, line_no, out, raw);
        }
        if gen.is_some() && (rest.starts_with("Young Generation") || rest.starts_with("Old Generation")) {
            return self.zgen_line(o, &gc_id, rest, d, line_no);
        }
        if (c0 == 'A' && rest.starts_with("Allocation Stall (")) || (c0 == 'R' && rest.starts_with("Relocation Stall (")) {
            return self.plain_line(o, rest, d, line_no, out, raw);
        }
        self.detail_line(o, &gc_id, rest, c0, d, line_no)
    }

    /// 'User=.. Sys=.. Real=..': the CPU times of the id's last ready event.
    fn cpu_line(&mut self, gc_id: &PyInt, rest: &str, out: &mut Out) -> u8 {
        let Some((u, sy, re)) = cpu_of(rest) else { return UNKNOWN };
        if let Some(t) = self.ready.iter_mut().rev().find(|e| e.gc_id.as_ref() == Some(gc_id)) {
            if t.user_s.is_none() {
                t.user_s = Some(num(u));
                t.sys_s = Some(num(sy));
                t.real_s = Some(num(re));
            }
        }
        self.flush_ready(out);
        EVENT
    }

    /// Labelled lines, failure markers, other detail lines of a GC id.
    fn detail_line(&mut self, o: &mut Owner, gc_id: &PyInt, rest: &str, c0: char, d: Option<&Deco>, line_no: u64) -> u8 {
        if let Some(colon) = memchr::memchr(b':', rest.as_bytes()) {
            let nchars = if rest.is_ascii() { colon } else { rest[..colon].chars().count() };
            if 0 < nchars && nchars < 24 {
                if let Some(code) = self.label_line(o, gc_id, rest, colon, c0, d, line_no) {
                    return code;
                }
            }
        }
        let flag = match c0 {
            'P' if rest.starts_with("Promotion failed") => "promotion-failed",
            'T' if rest.starts_with("To-space exhausted") => "to-space-exhausted",
            _ => return if res().gc_detail.is_match(rest) { EVENT } else { UNKNOWN },
        };
        let i = self.get_or_state(o, gc_id, line_no, d);
        if !self.states[i].flags.contains(&flag) {
            self.states[i].flags.push(flag);
        }
        EVENT
    }

    /// 'Label: ...' lines of a GC id: generation sizes, G1 regions, Shenandoah cancellation.
    fn label_line(
        &mut self, o: &mut Owner, gc_id: &PyInt, rest: &str, colon: usize, c0: char, d: Option<&Deco>, line_no: u64,
    ) -> Option<u8> {
        let key = &rest[..colon];
        if GEN_KEYS.contains(&key) {
            self.gen_sizes_line(o, gc_id, rest, key, d, line_no);
        } else if key.ends_with(" regions") {
            self.regions_line(o, gc_id, rest, d, line_no);
        } else if key == "Cancelling GC" {
            self.cancel_line(o, gc_id, rest, d, line_no);
        } else {
            let next = &rest[colon + 1..];
            // a 'Label: value' detail line
            return ((next.is_empty() || next.starts_with(' ')) && is_alpha(c0)).then_some(EVENT);
        }
        Some(EVENT)
    }

    /// 'DefNew: 1K->2K(3K)' and the like: a generation's sizes.
    fn gen_sizes_line(&mut self, o: &mut Owner, gc_id: &PyInt, rest: &str, key: &str, d: Option<&Deco>, line_no: u64) {
        let Some((g, b, a, c)) = gen_of(rest, key) else { return };
        let i = self.get_or_state(o, gc_id, line_no, d);
        let vals = [kb(b), kb(a), kb(c)];
        if let Some(h) = gen_hint(g) {
            o.set_collector_unified(Some(h));
        }
        let st = &mut self.states[i];
        match g {
            "DefNew" | "PSYoungGen" | "ParNew" => st.young = Some(vals),
            "Tenured" | "ParOldGen" | "PSOldGen" | "CMS" => st.old = Some(vals),
            _ => st.meta = Some(vals),
        }
    }

    /// 'Eden regions: 3->0(5)' and the like: G1 region counts.
    fn regions_line(&mut self, o: &mut Owner, gc_id: &PyInt, rest: &str, d: Option<&Deco>, line_no: u64) {
        let Some((kind, b, a)) = regions_of(rest) else { return };
        let i = self.get_or_state(o, gc_id, line_no, d);
        let (b, a) = (PyInt::parse(b).unwrap(), PyInt::parse(a).unwrap());
        let regions = self.states[i].regions.get_or_insert_with(Vec::new);
        match regions.iter_mut().find(|(k, _, _)| &**k == kind) {
            Some(e) => {
                e.1 = b;
                e.2 = a;
            }
            None => regions.push((kind.into(), b, a)),
        }
        o.set_collector_unified(Some("g1"));
    }

    /// 'Cancelling GC: ...' (Shenandoah)
    fn cancel_line(&mut self, o: &mut Owner, gc_id: &PyInt, rest: &str, d: Option<&Deco>, line_no: u64) {
        let i = self.get_or_state(o, gc_id, line_no, d);
        let st = &mut self.states[i];
        st.cycle_flags.push("cancelled");
        if rest.contains("Upgrade To Full") {
            st.cycle_flags.push("upgrade-to-full");
            if st.pause_line != 0 {
                st.flags.push("upgrade-to-full");
            }
        }
    }
}
