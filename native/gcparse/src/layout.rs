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

    /// `layout.regex.match(line)`: group spans into `locs`, false if no match.  ASCII lines
    /// (all but a few) are scanned by hand: the regex (a one-pass DFA) cost ~2,800
    /// instructions a line, the scan a tenth of that.
    pub fn read(&self, locs: &mut Locs, line: &str) -> bool {
        if line.is_ascii() {
            return self.scan(locs, line.as_bytes());
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

    fn scan(&self, locs: &mut Locs, b: &[u8]) -> bool {
        let (mut i, mut g) = (0, 1);
        for k in &self.kinds {
            if b.get(i) != Some(&b'[') {
                return false;
            }
            let Some((end, next)) = scan_kind(*k, b, i + 1) else { return false };
            if !matches!(k, Kind::Num | Kind::Other) {
                locs.0[g] = Some((i + 1, end));
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
#[derive(Clone, Debug, Default)]
pub struct Locs(Vec<Option<(usize, usize)>>);

impl Locs {
    pub fn get(&self, i: usize) -> Option<(usize, usize)> {
        self.0.get(i).copied().flatten()
    }
}

fn run(b: &[u8], mut i: usize, f: impl Fn(u8) -> bool) -> usize {
    while i < b.len() && f(b[i]) {
        i += 1;
    }
    i
}

fn digits(b: &[u8], i: usize) -> usize {
    run(b, i, |c| c.is_ascii_digit())
}

/// `\d{n}` at i: the index after them
fn n_digits(b: &[u8], i: usize, n: usize) -> Option<usize> {
    (b.len() >= i + n && b[i..i + n].iter().all(u8::is_ascii_digit)).then_some(i + n)
}

fn lit(b: &[u8], i: usize, l: &[u8]) -> Option<usize> {
    b[i.min(b.len())..].starts_with(l).then_some(i + l.len())
}

/// CPython's `\s` on ASCII
fn space(c: u8) -> bool {
    matches!(c, b'\t'..=b'\r' | 0x1c..=0x20)
}

/// One decorator of `kind_re(k)` (ASCII haystack) from just after its '[': (end of the
/// captured value, index after the ']').  Every optional part starts with a character the
/// text after it cannot, so no backtracking is needed to agree with the regex.
fn scan_kind(k: Kind, b: &[u8], i: usize) -> Option<(usize, usize)> {
    let nonempty = |j: usize| (j > i).then_some(j);
    let end = match k {
        Kind::Time => {
            // \d{4}-\d\d-\d\dT[\d:.,]+(?:[+-]\d\d:?\d\d|Z)?
            let mut j = n_digits(b, i, 4)?;
            for (sep, n) in [(b'-', 2), (b'-', 2)] {
                j = n_digits(b, lit(b, j, &[sep])?, n)?;
            }
            let t = lit(b, j, b"T")?;
            j = run(b, t, |c| c.is_ascii_digit() || matches!(c, b':' | b'.' | b','));
            if j == t {
                return None;
            }
            match b.get(j) {
                Some(b'Z') => j + 1,
                Some(b'+' | b'-') => {
                    let h = n_digits(b, j + 1, 2)?;
                    n_digits(b, lit(b, h, b":").unwrap_or(h), 2)?
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
        Kind::Level => nonempty(run(b, i, |c| c.is_ascii_alphanumeric() || c == b'_'))?,
        Kind::Num => nonempty(digits(b, i))?,
        Kind::Tags => {
            if !b.get(i).map_or(false, u8::is_ascii_lowercase) {
                return None;
            }
            run(b, i + 1, |c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b',')
        }
        Kind::Other => run(b, i, |c| c != b'[' && c != b']'),
    };
    // the trailing \s* of Level and Tags (not part of the value)
    let close = if matches!(k, Kind::Level | Kind::Tags) { run(b, end, space) } else { end };
    Some((end, lit(b, close, b"]")?))
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

