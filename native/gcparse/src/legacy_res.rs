//! The legacy handler's patterns (vocab.rs, generated from _legacy.py), compiled once.
//! Lookarounds, which the regex crate lacks, are taken out here and checked by hand where
//! the patterns are used (see `record_start`, `top_start`, `head_match`).

use crate::pyfns::{is_decimal, is_space, is_word};
use crate::rx::spec;
use crate::vocab as v;
use crate::rx::Re;
use regex::Captures;
use std::sync::OnceLock;

pub struct LegacyRes {
    pub record_start: Re,
    pub top_start: Re,
    pub prefix: Re,
    pub conc: Re,
    pub ergo: Re,
    pub stopped: Re,
    pub tlab: Re,
    pub preclean_ref: Re,
    pub ts_in_sub: Re,
    pub apptime: Re,
    pub adaptive: Re,
    pub before_after: Re,
    pub detail_line: Re,
    pub residue: Re,
    pub prefix_only: Re,
    pub stats_start: Re,
    pub heapblock: Re,
    pub cms_abort: Re,
    pub class_histo: Re,
    pub legacy_info: Re,
    pub info_line: Re,
    pub times: Re,
    pub trailing_times: Re,
    pub inner: Re,
    pub sub: Re,
    pub cms_phase: Re,
    pub yg: Re,
    pub g1_detail: Re,
    pub heap_total: Re,
    pub secs: Re,
    pub occupancy: Re,
    pub paren: Re,
    pub fast_detail: Re,
    pub fast_times: Re,
    pub fast_eden: Re,
    pub fast_young: Re,
    pub fast_stopped: Re,
    pub conc_name_ok: Re,
}

const GC_LOOKAHEAD: &str = "GC(?! Worker)(?![a-z])";

pub fn res() -> &'static LegacyRes {
    static R: OnceLock<LegacyRes> = OnceLock::new();
    R.get_or_init(|| LegacyRes {
        record_start: spec(v::RECORD_START, &[(GC_LOOKAHEAD, "GC")], true),
        top_start: spec(v::TOP_START, &[("GC(?! Worker)(?![a-z])(?![^\\]]*concurrent-)", "(?P<gc>GC)")], true),
        prefix: spec(v::PREFIX, &[], true),
        conc: spec(v::CONC, &[], false),
        ergo: spec(v::ERGO, &[], false),
        stopped: spec(v::STOPPED, &[], false),
        tlab: spec(v::TLAB, &[], false),
        preclean_ref: spec(v::PRECLEAN_REF, &[], false),
        ts_in_sub: spec(v::TS_IN_SUB, &[], false),
        apptime: spec(v::APPTIME, &[], false),
        adaptive: spec(v::ADAPTIVE, &[], false),
        before_after: spec(v::BEFORE_AFTER, &[], false),
        detail_line: spec(v::DETAIL_LINE, &[], true),
        residue: spec(v::RESIDUE, &[], true),
        prefix_only: spec(v::PREFIX_ONLY, &[], true),
        stats_start: spec(v::STATS_START, &[], true),
        heapblock: spec(v::HEAPBLOCK, &[], false),
        cms_abort: spec(v::CMS_ABORT, &[], false),
        class_histo: spec(v::CLASS_HISTO, &[], true),
        legacy_info: spec(v::LEGACY_INFO, &[], true),
        info_line: spec(v::INFO_LINE, &[], true),
        times: spec(v::TIMES, &[], false),
        trailing_times: spec(v::TRAILING_TIMES, &[], true),
        inner: spec(v::INNER, &[], false),
        sub: spec(v::SUB, &[], true),
        cms_phase: spec(v::CMS_PHASE, &[], true),
        yg: spec(v::YG, &[], true),
        g1_detail: spec(v::G1_DETAIL, &[], false),
        heap_total: spec(v::HEAP_TOTAL, &[("(?<![\\d.,])", "")], false),
        secs: spec(v::SECS, &[("(?<![\\d.,])", ""), ("(secs|ms)\\b", "(secs|ms)")], false),
        occupancy: spec(v::OCCUPANCY, &[("(?<![>\\d.])", "")], false),
        paren: spec(v::PAREN, &[], false),
        fast_detail: spec(v::FAST_DETAIL, &[], true),
        fast_times: spec(v::FAST_TIMES, &[], true),
        fast_eden: spec(v::FAST_EDEN, &[], true),
        fast_young: spec(v::FAST_YOUNG, &[], true),
        fast_stopped: spec(v::FAST_STOPPED, &[], true),
        conc_name_ok: spec(v::CONC_NAME_OK, &[], false),
    })
}

/// `GC(?! Worker)(?![a-z])` after a matched `GC` ending at `end`.
fn gc_lookahead_ok(s: &str, end: usize) -> bool {
    let after = &s[end..];
    !(after.starts_with(" Worker") || after.as_bytes().first().map_or(false, |b| b.is_ascii_lowercase()))
}

/// `_RECORD_START_RE.match(s)`
pub fn record_start(s: &str) -> Option<Captures<'_>> {
    let c = res().record_start.captures(s)?;
    let head = c.name("head").unwrap();
    if head.as_str() == "GC" && !gc_lookahead_ok(s, head.end()) {
        return None;
    }
    Some(c)
}

/// `_TOP_START_RE.match(s) is not None`
pub fn top_start(s: &str) -> bool {
    let Some(c) = res().top_start.captures(s) else { return false };
    let Some(gc) = c.name("gc") else { return true }; // 'Full GC'
    if !gc_lookahead_ok(s, gc.end()) {
        return false;
    }
    // (?![^\]]*concurrent-): no 'concurrent-' before the next ']'
    let after = &s[gc.end()..];
    let seg = &after[..after.find(']').unwrap_or(after.len())];
    !seg.contains("concurrent-")
}

fn bad_heap_prev(c: char) -> bool {
    is_decimal(c) || c == '.' || c == ','
}
fn bad_occ_prev(c: char) -> bool {
    is_decimal(c) || c == '.' || c == '>'
}

/// `_HEAP_TOTAL_RE.finditer(s)`
pub fn heap_totals(s: &str) -> Vec<Captures<'_>> {
    crate::rx::find_iter_lookbehind(&res().heap_total, s, bad_heap_prev).collect()
}

/// `_HEAP_TOTAL_RE.sub("", s)`
pub fn heap_total_sub(s: &str) -> String {
    let mut out = String::new();
    let mut last = 0;
    for c in heap_totals(s) {
        let m = c.get(0).unwrap();
        out.push_str(&s[last..m.start()]);
        last = m.end();
    }
    out.push_str(&s[last..]);
    out
}

/// `_OCCUPANCY_RE.search(s)`
pub fn occupancy(s: &str) -> Option<Captures<'_>> {
    crate::rx::find_iter_lookbehind(&res().occupancy, s, bad_occ_prev).next()
}

/// `_SECS_RE.findall(s)[-1]`: the last '(\d+[.,]\d+)\s*(secs|ms)\b' not preceded by a digit.
pub fn last_secs(s: &str) -> Option<(String, String)> {
    let re = &res().secs;
    let mut pos = 0;
    let mut last = None;
    while pos <= s.len() {
        let Some(c) = re.captures_at(s, pos) else { break };
        let m = c.get(0).unwrap();
        let prev_bad = s[..m.start()].chars().next_back().map_or(false, bad_heap_prev);
        // \b after the unit: the next character is not a word character
        let next_word = s[m.end()..].chars().next().map_or(false, is_word);
        if prev_bad || next_word {
            pos = crate::rx::next_char_boundary(s, m.start());
            continue;
        }
        last = Some((c[1].to_string(), c[2].to_string()));
        pos = m.end();
    }
    last
}

/// `_HEAD_RE.match(top)`: (head, end of head).
pub fn head_match(top: &str) -> Option<(&str, usize)> {
    let p = top.len() - top.trim_start_matches(is_space).len();
    let t = &top[p..];
    // (?=[\s(\[:,\d]|$)
    let la = |q: usize| match t[q..].chars().next() {
        None => true,
        Some(c) => is_space(c) || is_decimal(c) || matches!(c, '(' | '[' | ':' | ','),
    };
    for alt in ["Class Histogram", "Full GC", "GC--", "GC pause", "GC remark", "GC cleanup", "GC"] {
        if t.starts_with(alt) && la(alt.len()) {
            return Some((&t[..alt.len()], p + alt.len()));
        }
    }
    let lazy = |mut q: usize, mut need: usize| -> Option<usize> {
        loop {
            if need == 0 && la(q) {
                return Some(q);
            }
            let c = t[q..].chars().next()?;
            if !(is_word(c) || c == ' ') {
                return None;
            }
            q += c.len_utf8();
            need = need.saturating_sub(1);
        }
    };
    if t.starts_with("Pause ") && t[6..].chars().next().map_or(false, |c| c.is_ascii_uppercase()) {
        if let Some(q) = lazy(7, 0) {
            return Some((&t[..q], p + q));
        }
    }
    if t.starts_with("Concurrent ") {
        if let Some(q) = lazy(11, 1) {
            return Some((&t[..q], p + q));
        }
    }
    None
}
