//! Hand-written scanners for the unified `GC(n)` message patterns of unified_gc_match.rs (pause,
//! concurrent, ZGC cycle and generation lines, CPU times, G1 regions, generation sizes) and
//! the safepoint line.  The regex crate ran these through its bounded backtracker (a few
//! thousand instructions a line); these are one forward pass.
//!
//! Each scanner gives exactly the pattern's answer on the haystacks `plain()` admits (ASCII,
//! no '\n'): every choice in these patterns is decided by the next character (a name word
//! starts with a letter, a qualifier with '(', a size or duration with a digit, and a size's
//! unit is upper case where a duration's is lower case), so no backtracking is needed.
//! Other haystacks go to the regexes.  tests/unified_scan.rs checks scanners against regexes.

/// Haystacks the scanners handle (the regexes' ASCII twins apply, `.` never meets '\n').
#[inline]
pub fn plain(s: &str) -> bool {
    s.is_ascii() && memchr::memchr(b'\n', s.as_bytes()).is_none()
}

/// The groups of `Pause|Concurrent {name}{quals}(?: {heap})? {dur}\s*$` (offsets into the
/// message for the two spans the callers cut at).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct GcEnd<'a> {
    pub name: &'a str,
    pub quals: &'a str,
    /// (start of hb, hb, ha, hc)
    pub heap: Option<(usize, &'a str, &'a str, &'a str)>,
    pub dur_start: usize,
    pub dur: &'a str,
    pub unit: &'a str,
}

/// `name` and `quals` of `Pause|Concurrent {name}{quals}\s*$`.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct GcStart<'a> {
    pub name: &'a str,
    pub quals: &'a str,
}

pub(crate) struct Cur<'a> {
    pub s: &'a str,
    pub b: &'a [u8],
    pub i: usize,
}

impl<'a> Cur<'a> {
    pub fn new(s: &'a str) -> Cur<'a> {
        Cur { s, b: s.as_bytes(), i: 0 }
    }
    #[inline(always)]
    pub fn peek(&self) -> u8 {
        self.b.get(self.i).copied().unwrap_or(0)
    }
    #[inline(always)]
    pub fn at(&self, k: usize) -> u8 {
        self.b.get(self.i + k).copied().unwrap_or(0)
    }
    #[inline(always)]
    pub fn lit(&mut self, l: &str) -> bool {
        let ok = self.b[self.i..].starts_with(l.as_bytes());
        self.i += if ok { l.len() } else { 0 };
        ok
    }
    #[inline(always)]
    pub fn run(&mut self, f: impl Fn(u8) -> bool) -> usize {
        let start = self.i;
        while self.i < self.b.len() && f(self.b[self.i]) {
            self.i += 1;
        }
        self.i - start
    }
    #[inline(always)]
    pub fn digits(&mut self) -> usize {
        self.run(|c| c.is_ascii_digit())
    }
    /// `\d+(?:[.,]\d+)?`
    #[inline(always)]
    pub fn number(&mut self) -> Option<&'a str> {
        let start = self.i;
        if self.digits() == 0 {
            return None;
        }
        if matches!(self.peek(), b'.' | b',') && self.at(1).is_ascii_digit() {
            self.i += 1;
            self.digits();
        }
        Some(&self.s[start..self.i])
    }
    /// `\s*$`: the rest is whitespace (CPython's `\s` on ASCII)
    #[inline(always)]
    pub fn blank_rest(&self) -> bool {
        self.b[self.i..].iter().all(|&c| space(c))
    }
    pub fn span(&self, start: usize) -> &'a str {
        &self.s[start..self.i]
    }
}

/// CPython's `\s` on ASCII
#[inline]
pub fn space(c: u8) -> bool {
    matches!(c, b'\t'..=b'\r' | 0x1c..=0x20)
}

/// `[A-Za-z][A-Za-z0-9\-]*(?: [A-Za-z][A-Za-z0-9\-]*)*`: words as long as the next one
/// starts with a letter (the pattern's lazy repetition ends up there too: what follows a
/// name -- ' (', ' <digit>' or the end -- never starts with a letter).
fn name<'a>(c: &mut Cur<'a>) -> Option<&'a str> {
    let start = c.i;
    if !c.peek().is_ascii_alphabetic() {
        return None;
    }
    loop {
        c.run(|b| b.is_ascii_alphanumeric() || b == b'-');
        if c.peek() == b' ' && c.at(1).is_ascii_alphabetic() {
            c.i += 1;
        } else {
            return Some(c.span(start));
        }
    }
}

/// One `\((?:[^()]|\([^()]*\))*\)` at the cursor.
fn qual(c: &mut Cur) -> Option<()> {
    if c.peek() != b'(' {
        return None;
    }
    c.i += 1;
    loop {
        match c.peek() {
            b')' => {
                c.i += 1;
                return Some(());
            }
            b'(' => {
                c.i += 1;
                c.run(|b| b != b'(' && b != b')');
                if c.peek() != b')' {
                    return None;
                }
                c.i += 1;
            }
            _ if c.i >= c.b.len() => return None,
            _ => c.i += 1,
        }
    }
}

/// `(?: Q)*`: a ' (' that does not open a whole qualifier fails the pattern (nothing
/// after the qualifiers may start with '(').
fn quals_spaced<'a>(c: &mut Cur<'a>) -> Option<&'a str> {
    let start = c.i;
    while c.peek() == b' ' && c.at(1) == b'(' {
        c.i += 1;
        qual(c)?;
    }
    Some(c.span(start))
}

/// SIZE = `\d+(?:[.,]\d+)?\s?[BKMGT]`
fn size<'a>(c: &mut Cur<'a>) -> Option<&'a str> {
    let start = c.i;
    c.number()?;
    if space(c.peek()) && matches!(c.at(1), b'B' | b'K' | b'M' | b'G' | b'T') {
        c.i += 1;
    }
    if !matches!(c.peek(), b'B' | b'K' | b'M' | b'G' | b'T') {
        return None;
    }
    c.i += 1;
    Some(c.span(start))
}

/// `(?P<hb>SIZE)(?:\((?P<hcb>SIZE)\))?->(?P<ha>SIZE)\((?P<hc>SIZE)\)`: (hb, cb, ha, hc)
fn heap<'a>(c: &mut Cur<'a>) -> Option<(&'a str, Option<&'a str>, &'a str, &'a str)> {
    let hb = size(c)?;
    let mut cb = None;
    if c.lit("(") {
        cb = Some(size(c)?);
        if !c.lit(")") {
            return None;
        }
    }
    if !c.lit("->") {
        return None;
    }
    let ha = size(c)?;
    if !c.lit("(") {
        return None;
    }
    let hc = size(c)?;
    c.lit(")").then_some((hb, cb, ha, hc))
}

/// `Pause {name}{quals}(?: {heap})? {dur}\s*$` (prefix "Pause ") or the Concurrent twin.
pub fn gc_end<'a>(msg: &'a str, prefix: &str) -> Option<GcEnd<'a>> {
    let mut c = Cur::new(msg);
    if !c.lit(prefix) {
        return None;
    }
    let name = name(&mut c)?;
    let quals = quals_spaced(&mut c)?;
    if !c.lit(" ") {
        return None;
    }
    // a size (then ' ' and the duration) or the duration: the unit after the number decides
    let at = c.i;
    let mut heap_m = None;
    let mut probe = Cur { s: c.s, b: c.b, i: at };
    probe.number()?;
    if probe.peek() == b' ' {
        probe.i += 1;
    }
    if !matches!(probe.peek(), b'm' | b's' | b'u') {
        let (hb, _, ha, hc) = heap(&mut c)?;
        heap_m = Some((at, hb, ha, hc));
        if !c.lit(" ") {
            return None;
        }
    }
    let dur_start = c.i;
    let dur = c.number()?;
    c.lit(" ");
    let unit_start = c.i;
    if !(c.lit("ms") || c.lit("s") || c.lit("us")) {
        return None;
    }
    let unit = c.span(unit_start);
    c.blank_rest().then_some(GcEnd { name, quals, heap: heap_m, dur_start, dur, unit })
}

/// `Pause {name}{quals}\s*$` (prefix "Pause ") or the Concurrent twin.
pub fn gc_start<'a>(msg: &'a str, prefix: &str) -> Option<GcStart<'a>> {
    let mut c = Cur::new(msg);
    if !c.lit(prefix) {
        return None;
    }
    let name = name(&mut c)?;
    let quals = quals_spaced(&mut c)?;
    c.blank_rest().then_some(GcStart { name, quals })
}

/// The inner texts of the qualifiers of a `quals` group (what `\(((?:[^()]|\([^()]*\))*)\)`
/// finds in it, the group being a sequence of whole qualifiers and blanks).
pub fn split_quals(quals: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut c = Cur::new(quals);
    while c.i < c.b.len() {
        if c.peek() != b'(' {
            c.i += 1;
            continue;
        }
        let start = c.i;
        if qual(&mut c).is_none() {
            break;
        }
        out.push(&quals[start + 1..c.i - 1]);
    }
    out
}

/// `User=(..)s Sys=(..)s Real=(..)s` at the start: the three numbers.
pub fn cpu(msg: &str) -> Option<(&str, &str, &str)> {
    let mut c = Cur::new(msg);
    let one = |c: &mut Cur<'_>, label: &str| -> Option<()> { (c.lit(label)).then_some(()) };
    one(&mut c, "User=")?;
    let u = c.number()?;
    one(&mut c, "s Sys=")?;
    let s = c.number()?;
    one(&mut c, "s Real=")?;
    let r = c.number()?;
    one(&mut c, "s")?;
    Some((u, s, r))
}

/// `(Eden|Survivor|Old|Humongous|Archive) regions: (\d+)->(\d+)` at the start.
pub fn regions(msg: &str) -> Option<(&str, &str, &str)> {
    let mut c = Cur::new(msg);
    let kind = ["Eden", "Survivor", "Old", "Humongous", "Archive"].into_iter().find(|k| c.lit(k))?;
    if !c.lit(" regions: ") {
        return None;
    }
    let start = c.i;
    c.digits();
    let b = Some(c.span(start)).filter(|t| !t.is_empty())?;
    if !c.lit("->") {
        return None;
    }
    let start = c.i;
    c.digits();
    let a = Some(c.span(start)).filter(|t| !t.is_empty())?;
    Some((kind, b, a))
}

/// `{key}:\s+(?P<b>SIZE)(?:\((?P<cb>SIZE)\))?->(?P<a>SIZE)\((?P<c>SIZE)\)` at the start, for a
/// generation key (the alternation's names hold no ':' and none is a prefix of another
/// followed by ':', so the key before the first ':' is the one matched): (b, a, c).
pub fn gen_sizes<'a>(msg: &'a str, key: &str) -> Option<(&'a str, &'a str, &'a str)> {
    let mut c = Cur::new(msg);
    if !c.lit(key) || !c.lit(":") || c.run(space) == 0 {
        return None;
    }
    let (b, _, a, cc) = heap(&mut c)?;
    Some((b, a, cc))
}

/// `{SIZE}\(\d+%\)` (a ZGC size with its share of the heap)
fn zsize<'a>(c: &mut Cur<'a>) -> Option<&'a str> {
    let s = size(c)?;
    if !c.lit("(") || c.digits() == 0 || !c.lit("%)") {
        return None;
    }
    Some(s)
}

/// `{hb}->{ha}(?: (?P<dur>\d+(?:[.,]\d+)?)s)?\s*$` after the qualifiers: (hb start, hb, ha, dur)
fn zsizes<'a>(c: &mut Cur<'a>) -> Option<(usize, &'a str, &'a str, Option<&'a str>)> {
    c.run(space);
    let at = c.i;
    let hb = zsize(c)?;
    if !c.lit("->") {
        return None;
    }
    let ha = zsize(c)?;
    let mut dur = None;
    if c.peek() == b' ' && c.at(1).is_ascii_digit() {
        let save = c.i;
        c.i += 1;
        let d = c.number()?;
        if c.lit("s") {
            dur = Some(d);
        } else {
            c.i = save; // not a duration: the rest must be blank
        }
    }
    c.blank_rest().then_some((at, hb, ha, dur))
}

/// ZGC cycle line `(Garbage|Major|Minor) Collection {quals}...`: name, quals and, for the end
/// line, the sizes (None: the start line `...{quals}\s*$`).
pub struct ZCycle<'a> {
    pub name: &'a str,
    pub quals: &'a str,
    pub end: Option<(usize, &'a str, &'a str, Option<&'a str>)>,
}

/// zcycle_end, else zcycle_start; None: neither matches.
pub fn zcycle(msg: &str) -> Option<ZCycle<'_>> {
    let mut c = Cur::new(msg);
    let name = ["Garbage", "Major", "Minor"].into_iter().find(|k| c.lit(k))?;
    if !c.lit(" Collection ") {
        return None;
    }
    // (?:Q ?)+
    let start = c.i;
    qual(&mut c)?;
    loop {
        c.lit(" ");
        if c.peek() != b'(' {
            break;
        }
        qual(&mut c)?;
    }
    let quals = c.span(start);
    if c.blank_rest() {
        return Some(ZCycle { name, quals, end: None });
    }
    let end = zsizes(&mut c)?;
    Some(ZCycle { name, quals, end: Some(end) })
}

/// zgen_end `(Young|Old) Generation(?: Q)*\s*{hb}->{ha}...`: (name, hb, ha).
pub fn zgen_end(msg: &str) -> Option<(&str, &str, &str)> {
    let mut c = Cur::new(msg);
    let name = ["Young", "Old"].into_iter().find(|k| c.lit(k))?;
    if !c.lit(" Generation") {
        return None;
    }
    quals_spaced(&mut c)?;
    let (_, hb, ha, _) = zsizes(&mut c)?;
    Some((name, hb, ha))
}

/// `Safepoint "(?P<op>[^"]*)", Time since last: \d+ ns, Reaching safepoint: (?P<reach>\d+) ns,`
/// `.*\bTotal: (?P<total>\d+) ns(?:,.*)?\s*$`: (op, reach, total).  The greedy `.*` takes the
/// last "Total: " (after a non-word character) whose rest fits.
pub fn safepoint(msg: &str) -> Option<(&str, &str, &str)> {
    let mut c = Cur::new(msg);
    if !c.lit("Safepoint \"") {
        return None;
    }
    let start = c.i;
    c.run(|b| b != b'"');
    let op = c.span(start);
    if !c.lit("\", Time since last: ") || c.digits() == 0 || !c.lit(" ns, Reaching safepoint: ") {
        return None;
    }
    let start = c.i;
    if c.digits() == 0 {
        return None;
    }
    let reach = c.span(start);
    if !c.lit(" ns,") {
        return None;
    }
    let from = c.i;
    let b = msg.as_bytes();
    let mut end = msg.len();
    while let Some(k) = memchr::memmem::rfind(&b[from..end], b"Total: ") {
        let at = from + k;
        end = at + "Total: ".len() - 1; // the next search ends before this 'T' + 6
        let word_before = at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        if word_before {
            continue;
        }
        let mut t = Cur { s: msg, b, i: at + "Total: ".len() };
        let start = t.i;
        if t.digits() == 0 {
            continue;
        }
        let total = t.span(start);
        if !t.lit(" ns") {
            continue;
        }
        if t.peek() == b',' || t.blank_rest() {
            return Some((op, reach, total));
        }
    }
    None
}

/// `(?:Allocation|Relocation) Stall \((?P<thread>.*)\) (?P<dur>\d+(?:[.,]\d+)?) ?ms\s*$`: dur.
/// What follows the thread's ')' holds no ')', so it is the last ')' of the line.
pub fn stall(msg: &str) -> Option<&str> {
    let mut c = Cur::new(msg);
    if !(c.lit("Allocation Stall (") || c.lit("Relocation Stall (")) {
        return None;
    }
    let close = memchr::memrchr(b')', &msg.as_bytes()[c.i..])? + c.i;
    c.i = close + 1;
    if !c.lit(" ") {
        return None;
    }
    let dur = c.number()?;
    c.lit(" ");
    (c.lit("ms") && c.blank_rest()).then_some(dur)
}
