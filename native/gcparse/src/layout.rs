//! Unified-logging decorator layouts (`_unified.Layout`, `detect_layout`).

use crate::pyfns::{is_digit, PyInt};
use crate::rx::py_m;
use crate::rx::Re;
use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Time,
    Uptime,
    Ms,
    Ns,
    Level,
    Num,
    Tags,
    Other,
}

struct KindRes {
    bracket: Re,
    tests: Vec<(Kind, Re)>,
}

fn kind_res() -> &'static KindRes {
    static R: OnceLock<KindRes> = OnceLock::new();
    R.get_or_init(|| KindRes {
        bracket: py_m(r"\[([^\[\]]*)\]"),
        tests: vec![
            (Kind::Time, py_m(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:[+-]\d\d:?\d\d|Z)?$")),
            (Kind::Uptime, py_m(r"\d+(?:[.,]\d+)?s$")),
            (Kind::Ms, py_m(r"\d+ms$")),
            (Kind::Ns, py_m(r"\d+ns$")),
            (Kind::Level, py_m(r"(?:trace|debug|info|warning|error|develop)\s*$")),
            (Kind::Num, py_m(r"\d+$")),
            (Kind::Tags, py_m(r"[a-z][a-z0-9_]*(?:,[a-z0-9_]+)*\s*$")),
        ],
    })
}

fn kind_re(k: Kind) -> &'static str {
    match k {
        Kind::Time => r"\[(\d{4}-\d\d-\d\dT[\d:.,]+(?:[+-]\d\d:?\d\d|Z)?)\]",
        Kind::Uptime => r"\[(\d+(?:[.,]\d+)?)s\]",
        Kind::Ms => r"\[(\d+)ms\]",
        Kind::Ns => r"\[(\d+)ns\]",
        Kind::Level => r"\[(\w+)\s*\]",
        Kind::Num => r"\[\d+\]",
        Kind::Tags => r"\[([a-z][a-z0-9_,]*)\s*\]",
        Kind::Other => r"\[[^\[\]]*\]",
    }
}

/// A compiled decorator layout, e.g. `[time][uptime][level][tags]`; `g_*` are capture groups.
pub struct Layout {
    pub kinds: Vec<Kind>,
    pub regex: Re,
    pub g_wall: Option<usize>,
    pub g_wallms: Option<usize>,
    pub g_up: Option<usize>,
    pub g_upms: Option<usize>,
    pub g_upns: Option<usize>,
    pub g_level: Option<usize>,
    pub g_tags: Option<usize>,
}

impl Layout {
    fn new(kinds: Vec<Kind>, values: &[&str]) -> Layout {
        let pattern: String = kinds.iter().map(|k| kind_re(*k)).collect::<String>() + " ?";
        let regex = py_m(&pattern);
        let mut l = Layout {
            kinds: Vec::new(),
            regex,
            g_wall: None,
            g_wallms: None,
            g_up: None,
            g_upms: None,
            g_upns: None,
            g_level: None,
            g_tags: None,
        };
        let mut group = 0;
        let (mut ms_groups, mut ns_groups) = (Vec::new(), Vec::new());
        let mut first_ms_value: Option<PyInt> = None;
        for (kind, value) in kinds.iter().zip(values) {
            if matches!(kind, Kind::Num | Kind::Other) {
                continue;
            }
            group += 1;
            match kind {
                Kind::Time => {
                    if l.g_wall.is_none() {
                        l.g_wall = Some(group)
                    }
                }
                Kind::Uptime => l.g_up = Some(group),
                Kind::Ms => {
                    ms_groups.push(group);
                    if first_ms_value.is_none() {
                        first_ms_value = PyInt::parse(&value[..value.len() - 2]);
                    }
                }
                Kind::Ns => ns_groups.push(group),
                Kind::Level => l.g_level = Some(group),
                Kind::Tags => l.g_tags = Some(group),
                _ => {}
            }
        }
        // decorators come in a fixed order: time, utctime, uptime, timemillis, uptimemillis,
        // timenanos, uptimenanos, hostname, pid, tid, level, tags
        if ms_groups.len() >= 2 {
            l.g_wallms = Some(ms_groups[0]);
            l.g_upms = Some(ms_groups[1]);
        } else if let Some(&g) = ms_groups.first() {
            // a lone *millis decorator: epoch milliseconds (timemillis) are > 1e11
            let epoch = match &first_ms_value {
                Some(PyInt::Small(v)) => *v > 100_000_000_000,
                Some(PyInt::Big(_)) => true,
                None => false,
            };
            if epoch {
                l.g_wallms = Some(g);
            } else {
                l.g_upms = Some(g);
            }
        }
        // timenanos is an arbitrary clock: the last *nanos decorator is taken as uptimenanos
        if let Some(&g) = ns_groups.last() {
            l.g_upns = Some(g);
        }
        l.kinds = kinds;
        l
    }

    pub fn locations(&self) -> Locs {
        let groups = self.kinds.iter().filter(|k| !matches!(k, Kind::Num | Kind::Other)).count();
        Locs(vec![None; groups + 1])
    }

    /// `layout.regex.match(line)`: group spans into `locs`, false if no match.  The decorators
    /// are scanned by hand (the regex, a one-pass DFA, cost ~2,800 instructions a line); only
    /// a line the scan rejects and that is not ASCII goes to the regex.  A scan that succeeds
    /// is the regex's match on any line: each run of a class stops at an ASCII byte outside
    /// the class (where the regex's Unicode class stops too) or at a non-ASCII byte, and after
    /// a non-ASCII byte the scan requires an ASCII literal, so it fails there (`Other` runs
    /// over non-ASCII bytes as `[^\[\]]*` does).
    pub fn read(&self, locs: &mut Locs, line: &str) -> bool {
        if self.scan(locs, line.as_bytes()) {
            return true;
        }
        if line.is_ascii() {
            return false;
        }
        let mut cl = self.regex.capture_locations();
        if self.regex.captures_read(&mut cl, line).is_none() {
            return false;
        }
        for (i, slot) in locs.0.iter_mut().enumerate() {
            *slot = cl.get(i);
        }
        true
    }

    #[inline]
    fn scan(&self, locs: &mut Locs, b: &[u8]) -> bool {
        let (mut i, mut g) = (0, 1);
        for &k in &self.kinds {
            if b.get(i) != Some(&b'[') {
                return false;
            }
            let Some((end, next)) = scan_kind(k, b, i + 1) else { return false };
            if !matches!(k, Kind::Num | Kind::Other) {
                if let Some(slot) = locs.0.get_mut(g) {
                    *slot = Some((i + 1, end));
                }
                g += 1;
            }
            i = next;
        }
        if b.get(i) == Some(&b' ') {
            i += 1;
        }
        locs.0[0] = Some((0, i));
        true
    }
}

/// Group spans of a layout match (0: the whole match), as CaptureLocations gives them.
#[derive(Debug, Default)]
pub struct Locs(Vec<Option<(usize, usize)>>);

impl Clone for Locs {
    fn clone(&self) -> Self {
        Locs(self.0.clone())
    }
    /// into the existing vector (the derive would allocate a new one: once per line)
    fn clone_from(&mut self, source: &Self) {
        self.0.clone_from(&source.0);
    }
}

impl Locs {
    pub fn get(&self, i: usize) -> Option<(usize, usize)> {
        self.0.get(i).copied().flatten()
    }
}

// byte classes of the decorator scan (ASCII only: a byte >= 0x80 is in none but NOT_BRACKET)
const DIGIT: u8 = 1; // \d
const TIME: u8 = 2; // [\d:.,]
const WORD: u8 = 4; // \w
const TAG: u8 = 8; // [a-z0-9_,]
const SPACE: u8 = 16; // CPython's \s
const NOT_BRACKET: u8 = 32; // [^\[\]]
const LOWER: u8 = 64; // [a-z]

const fn class_of(c: u8) -> u8 {
    let mut k = 0;
    if c.is_ascii_digit() {
        k |= DIGIT | TIME | WORD | TAG;
    }
    if matches!(c, b':' | b'.' | b',') {
        k |= TIME;
    }
    if c.is_ascii_alphabetic() || c == b'_' {
        k |= WORD;
    }
    if c.is_ascii_lowercase() {
        k |= TAG | LOWER;
    }
    if matches!(c, b'_' | b',') {
        k |= TAG;
    }
    if matches!(c, b'\t'..=b'\r' | 0x1c..=0x20) {
        k |= SPACE;
    }
    if c != b'[' && c != b']' {
        k |= NOT_BRACKET;
    }
    k
}

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = class_of(c as u8);
        c += 1;
    }
    t
};

#[inline(always)]
fn is(c: u8, class: u8) -> bool {
    CLASS[c as usize] & class != 0
}

/// The index after the run of `class` bytes from i.
#[inline(always)]
fn run(b: &[u8], i: usize, class: u8) -> usize {
    let t = b.get(i..).unwrap_or_default();
    i + t.iter().position(|&c| !is(c, class)).unwrap_or(t.len())
}

#[inline(always)]
fn digits(b: &[u8], i: usize) -> usize {
    run(b, i, DIGIT)
}

/// `\d{n}` at i: the index after them
#[inline(always)]
fn n_digits(b: &[u8], i: usize, n: usize) -> Option<usize> {
    b.get(i..i + n)?.iter().all(|&c| is(c, DIGIT)).then_some(i + n)
}

#[inline(always)]
fn lit(b: &[u8], i: usize, l: &[u8]) -> Option<usize> {
    b.get(i..)?.starts_with(l).then_some(i + l.len())
}

#[inline(always)]
fn byte_at(b: &[u8], i: usize, c: u8) -> Option<usize> {
    (b.get(i) == Some(&c)).then_some(i + 1)
}

/// `\d{4}-\d\d-\d\dT` at i: the index after the 'T'
#[inline(always)]
fn date_t(b: &[u8], i: usize) -> Option<usize> {
    let d = b.get(i..i + 11)?;
    let ok = d.iter().enumerate().all(|(k, &c)| match k {
        4 | 7 => c == b'-',
        10 => c == b'T',
        _ => is(c, DIGIT),
    });
    ok.then_some(i + 11)
}

/// The usual `time` decorator, `2023-01-02T03:04:05.678+0100]` (29 bytes from just after the
/// '['), checked a word at a time: 'd' a digit, any other byte itself.
const TIME_SHAPE: &[u8; 29] = b"dddd-dd-ddTdd:dd:dd.ddd+dddd]";

/// (mask of the digit bytes, mask of the literal bytes, the literal bytes) of TIME_SHAPE, in
/// four little-endian words (the last three bytes of the fourth are outside the shape).
const TIME_WORDS: [(u64, u64, u64); 4] = {
    let mut w = [(0u64, 0u64, 0u64); 4];
    let mut k = 0;
    while k < 29 {
        let (word, shift) = (k / 8, (k % 8) * 8);
        if TIME_SHAPE[k] == b'd' {
            w[word].0 |= 0xff << shift;
        } else {
            w[word].1 |= 0xff << shift;
            w[word].2 |= (TIME_SHAPE[k] as u64) << shift;
        }
        k += 1;
    }
    w
};

/// Whether the 29 bytes at i have TIME_SHAPE.  The scan of `scan_kind(Kind::Time)` on them
/// ends the value before the ']' (the `[\d:.,]+` run stops at the '+'), so a match gives
/// (i + 28, i + 29) with no further look.
#[inline(always)]
fn usual_time(b: &[u8], i: usize) -> bool {
    let Some(d) = b.get(i..i + 32) else { return false };
    const LO: u64 = 0x0101_0101_0101_0101;
    TIME_WORDS.iter().enumerate().all(|(k, &(digit, litm, lit))| {
        let w = u64::from_le_bytes(d[k * 8..k * 8 + 8].try_into().unwrap());
        let t = w & digit;
        // a digit byte is 0x30-0x39: high nibble 3, and still 3 after adding 6 (no byte
        // carries into the next once every high nibble is 3)
        w & litm == lit
            && t & (0xf0 * LO) == (0x30 * LO) & digit
            && (t + (0x06 * LO & digit)) & (0xf0 * LO) == (0x30 * LO) & digit
    })
}

/// One decorator of `kind_re(k)` from just after its '[': (end of the
/// captured value, index after the ']').  Every optional part starts with a character the
/// text after it cannot, so no backtracking is needed to agree with the regex.
#[inline(always)]
fn scan_kind(k: Kind, b: &[u8], i: usize) -> Option<(usize, usize)> {
    let nonempty = |j: usize| (j > i).then_some(j);
    let end = match k {
        Kind::Time => {
            if usual_time(b, i) {
                return Some((i + 28, i + 29));
            }
            // \d{4}-\d\d-\d\dT[\d:.,]+(?:[+-]\d\d:?\d\d|Z)?
            let t = date_t(b, i)?;
            let j = run(b, t, TIME);
            if j == t {
                return None;
            }
            match b.get(j) {
                Some(b'Z') => j + 1,
                Some(b'+' | b'-') => {
                    let h = n_digits(b, j + 1, 2)?;
                    n_digits(b, byte_at(b, h, b':').unwrap_or(h), 2)?
                }
                _ => j,
            }
        }
        Kind::Uptime => {
            let j = nonempty(digits(b, i))?;
            let j = match b.get(j) {
                Some(b'.' | b',') => Some(digits(b, j + 1)).filter(|&e| e > j + 1)?,
                _ => j,
            };
            return Some((j, lit(b, j, b"s]")?));
        }
        Kind::Ms | Kind::Ns => {
            let j = nonempty(digits(b, i))?;
            return Some((j, lit(b, j, if k == Kind::Ms { b"ms]" } else { b"ns]" })?));
        }
        Kind::Level => nonempty(run(b, i, WORD))?,
        Kind::Num => nonempty(digits(b, i))?,
        Kind::Tags => {
            if !is(*b.get(i)?, LOWER) {
                return None;
            }
            run(b, i + 1, TAG)
        }
        Kind::Other => run(b, i, NOT_BRACKET),
    };
    // the trailing \s* of Level and Tags (not part of the value)
    let close = if matches!(k, Kind::Level | Kind::Tags) { run(b, end, SPACE) } else { end };
    Some((end, byte_at(b, close, b']')?))
}

/// `detect_layout`: classify the leading `[...]` groups; None if not a decorated line.
pub fn detect_layout(line: &str) -> Option<Layout> {
    let c = line[1..].chars().next();
    if !c.map_or(false, |c| c.is_ascii_lowercase() || is_digit(c)) {
        return None;
    }
    let r = kind_res();
    let mut pos = 0;
    let mut kinds = Vec::new();
    let mut values: Vec<&str> = Vec::new();
    let mut seen_time = false;
    while let Some(caps) = r.bracket.captures(&line[pos..]) {
        let value = caps.get(1).unwrap().as_str();
        let kind = r.tests.iter().find(|(_, t)| t.is_match(value)).map_or(Kind::Other, |(k, _)| *k);
        if kind == Kind::Other && !seen_time {
            return None;
        }
        if matches!(kind, Kind::Time | Kind::Uptime | Kind::Ms | Kind::Ns) {
            seen_time = true;
        }
        kinds.push(kind);
        values.push(value);
        pos += caps.get(0).unwrap().end();
        if kind == Kind::Tags {
            break;
        }
    }
    if kinds.is_empty() {
        return None;
    }
    if !(seen_time || kinds.contains(&Kind::Level) || kinds.contains(&Kind::Tags)) {
        return None;
    }
    Some(Layout::new(kinds, &values))
}

