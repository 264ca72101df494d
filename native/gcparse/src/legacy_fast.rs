//! Hand-written scanner for `_FAST_YOUNG_RE` (vocab::FAST_YOUNG, re.ASCII, matched from the
//! start to `\Z`): the one-line young collection that is most of a legacy CMS/serial/parallel
//! log.  The regex crate ran this pattern through its bounded backtracker (six `\d{1,15}`
//! make a large NFA, and its visited set is cleared per line): ~28,000 instructions a line.
//!
//! Every choice in the pattern is decided by the next character (each optional group starts
//! with a character its alternative cannot start with), so one forward pass without
//! backtracking gives the regex's answer; tests/fast_young.rs checks it against the regex.

/// The named groups of a match.
#[derive(Debug, Default, PartialEq)]
pub struct Young<'a> {
    pub date: Option<&'a str>,
    pub up: Option<&'a str>,
    pub gcid: Option<&'a str>,
    pub cause: Option<&'a str>,
    pub gen: &'a str,
    pub yb: &'a str,
    pub ya: &'a str,
    pub yc: &'a str,
    pub hb: &'a str,
    pub ha: &'a str,
    pub hc: &'a str,
    pub t: &'a str,
    /// user, sys, real of the `[Times: ...]` suffix
    pub times: Option<(&'a str, &'a str, &'a str)>,
    /// the values of hb, ha, hc, yb, ya, yc (read as they are scanned)
    pub kb: [i64; 6],
    /// the values of up, t, and of the times, read as they are scanned when that is exact
    /// (`fastnum::Dec`); None: absent, or to be parsed from the text
    pub vals: [Option<f64>; 5],
}

use crate::fastnum::ratio;

struct Cur<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    /// The text from `start` to `end`: the scanner cuts only next to ASCII bytes it matched.
    #[inline(always)]
    fn text(&self, start: usize, end: usize) -> &'a str {
        debug_assert!(self.s.is_char_boundary(start) && self.s.is_char_boundary(end));
        // SAFETY: start <= end <= len, both next to matched ASCII bytes: char boundaries
        unsafe { self.s.get_unchecked(start..end) }
    }
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    #[inline(always)]
    fn lit(&mut self, l: &str) -> bool {
        if self.b[self.i..].starts_with(l.as_bytes()) {
            self.i += l.len();
            true
        } else {
            false
        }
    }
    #[inline(always)]
    fn run(&mut self, f: impl Fn(u8) -> bool) -> usize {
        let start = self.i;
        while self.i < self.b.len() && f(self.b[self.i]) {
            self.i += 1;
        }
        self.i - start
    }
    #[inline(always)]
    fn digits(&mut self) -> usize {
        self.run(|c| c.is_ascii_digit())
    }
    /// `\d{n}`
    #[inline(always)]
    fn exact_digits(&mut self, n: usize) -> bool {
        let ok = self.b.len() >= self.i + n && self.b[self.i..self.i + n].iter().all(u8::is_ascii_digit);
        if ok {
            self.i += n;
        }
        ok
    }
    /// `\d*`, the digits appended to `m` (wrapping: exact for up to 19 digits in all)
    #[inline(always)]
    fn digits_into(&mut self, m: &mut u64) -> usize {
        let (b, start) = (self.b, self.i);
        let (mut i, mut v) = (start, *m);
        while i < b.len() {
            let d = b[i].wrapping_sub(b'0');
            if d >= 10 {
                break;
            }
            v = v.wrapping_mul(10).wrapping_add(d as u64);
            i += 1;
        }
        (self.i, *m) = (i, v);
        i - start
    }
    /// `\d+<sep>\d+` (sep one of `seps`): its text, and its value when `fastnum::ratio` of
    /// the digits read is exact
    #[inline(always)]
    fn decimal(&mut self, seps: &[u8]) -> Option<(&'a str, Option<f64>)> {
        let start = self.i;
        let mut m = 0;
        let n = self.digits_into(&mut m);
        if n == 0 || !self.peek().map_or(false, |c| seps.contains(&c)) {
            return None;
        }
        self.i += 1;
        let k = self.digits_into(&mut m);
        if k == 0 {
            return None;
        }
        Some((self.text(start, self.i), if n + k <= 19 { ratio(m, k) } else { None }))
    }
    /// `(?P<x>\d{1,15})K`: the text and its value (at most 15 digits: always an i64)
    #[inline(always)]
    fn kb(&mut self) -> Option<(&'a str, i64)> {
        let start = self.i;
        let mut v = 0;
        let n = self.digits_into(&mut v);
        if !(1..=15).contains(&n) || !self.lit("K") {
            return None;
        }
        Some((self.text(start, start + n), v as i64))
    }
    /// `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.,]\d{3}[+-]\d{4}` (a prefix date stamp)
    fn date(&mut self) -> Option<&'a str> {
        let start = self.i;
        let ok = self.exact_digits(4)
            && self.lit("-")
            && self.exact_digits(2)
            && self.lit("-")
            && self.exact_digits(2)
            && self.lit("T")
            && self.exact_digits(2)
            && self.lit(":")
            && self.exact_digits(2)
            && self.lit(":")
            && self.exact_digits(2)
            && self.one_of(b".,")
            && self.exact_digits(3)
            && self.one_of(b"+-")
            && self.exact_digits(4);
        if ok {
            Some(self.text(start, self.i))
        } else {
            self.i = start;
            None
        }
    }
    #[inline(always)]
    fn one_of(&mut self, set: &[u8]) -> bool {
        let ok = self.peek().map_or(false, |c| set.contains(&c));
        self.i += ok as usize;
        ok
    }
    /// re.ASCII `\s*`
    #[inline(always)]
    fn spaces(&mut self) {
        self.run(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c'));
    }
}

/// `_FAST_YOUNG_RE.match(line)`
pub fn scan_young(line: &str) -> Option<Young<'_>> {
    let mut c = Cur { s: line, b: line.as_bytes(), i: 0 };
    let mut y = Young::default();
    // (?:(?P<date>...):\s*)?  -- a date can only be followed by ':'
    if let Some(d) = c.date() {
        if !c.lit(":") {
            return None;
        }
        c.spaces();
        y.date = Some(d);
    }
    // (?:(?P<up>\d+[.,]\d+):\s*)?
    if c.peek().map_or(false, |b| b.is_ascii_digit()) {
        let (up, v) = c.decimal(b".,")?;
        (y.up, y.vals[0]) = (Some(up), v);
        if !c.lit(":") {
            return None;
        }
        c.spaces();
    }
    // (?:#(?P<gcid>\d+):\s*)?
    if c.lit("#") {
        let start = c.i;
        if c.digits() == 0 {
            return None;
        }
        y.gcid = Some(c.text(start, c.i));
        if !c.lit(":") {
            return None;
        }
        c.spaces();
    }
    if !c.lit("[GC") {
        return None;
    }
    scan_cause(&mut c, &mut y)?;
    c.lit(" ");
    // (?:<date>: )?(?:\d+[.,]\d+: )?  -- inner time stamps, not kept
    if c.date().is_some() && !c.lit(": ") {
        return None;
    }
    if c.peek().map_or(false, |b| b.is_ascii_digit()) && !(c.decimal(b".,").is_some() && c.lit(": ")) {
        return None;
    }
    scan_sizes(&mut c, &mut y)?;
    // (?: \[Times: user=.. sys=.., real=.. secs\])?
    if c.b[c.i..].starts_with(b" [") {
        c.i += 2;
        let times = (c.lit("Times: user="), c.decimal(b"."));
        let (true, Some((u, uv))) = times else { return None };
        let (s, sv) = if c.lit(" sys=") { c.decimal(b".")? } else { return None };
        let (r, rv) = if c.lit(", real=") { c.decimal(b".")? } else { return None };
        if !c.lit(" secs]") {
            return None;
        }
        y.times = Some((u, s, r));
        y.vals[2..].copy_from_slice(&[uv, sv, rv]);
    }
    // [ \t]*[\r\n]*\Z
    c.run(|b| b == b' ' || b == b'\t');
    c.run(|b| b == b'\r' || b == b'\n');
    (c.i == c.b.len()).then_some(y)
}

/// `(?: \((?P<cause>[A-Za-z][\w .]*(?:\(\))?)\))?` after `[GC`; None: no match possible.
fn scan_cause<'a>(c: &mut Cur<'a>, y: &mut Young<'a>) -> Option<()> {
    if !c.b[c.i..].starts_with(b" (") {
        return Some(());
    }
    // without the group, ` ?` and then '(' could not match: the group must
    c.i += 2;
    let start = c.i;
    if !c.peek().map_or(false, |b| b.is_ascii_alphabetic()) {
        return None;
    }
    c.run(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b' ' || b == b'.');
    c.lit("()");
    let end = c.i;
    if !c.lit(")") {
        return None;
    }
    y.cause = Some(c.text(start, end));
    Some(())
}

/// `\[(?P<gen>..): yb K->ya K(yc K)(?:, t secs)?\] hb K->ha K(hc K), t secs\]`
fn scan_sizes<'a>(c: &mut Cur<'a>, y: &mut Young<'a>) -> Option<()> {
    if !c.lit("[") {
        return None;
    }
    let start = c.i;
    if !(c.lit("DefNew") || c.lit("ParNew") || c.lit("PSYoungGen")) {
        return None;
    }
    y.gen = c.text(start, c.i);
    let lit = |c: &mut Cur<'a>, l: &str| c.lit(l).then_some(());
    lit(c, ": ")?;
    (y.yb, y.kb[3]) = c.kb()?;
    lit(c, "->")?;
    (y.ya, y.kb[4]) = c.kb()?;
    lit(c, "(")?;
    (y.yc, y.kb[5]) = c.kb()?;
    lit(c, ")")?;
    if c.lit(", ") {
        c.decimal(b".")?;
        lit(c, " secs")?;
    }
    lit(c, "] ")?;
    (y.hb, y.kb[0]) = c.kb()?;
    lit(c, "->")?;
    (y.ha, y.kb[1]) = c.kb()?;
    lit(c, "(")?;
    (y.hc, y.kb[2]) = c.kb()?;
    lit(c, "), ")?;
    (y.t, y.vals[1]) = c.decimal(b".")?;
    lit(c, " secs]")
}
