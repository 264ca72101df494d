//! Unified-logging decorator layouts (`_unified.Layout`, `detect_layout`).

use crate::pyfns::{is_digit, PyInt};
use crate::rx::py_m;
use regex::{CaptureLocations, Regex};
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
    bracket: Regex,
    tests: Vec<(Kind, Regex)>,
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
    pub regex: Regex,
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

    pub fn locations(&self) -> CaptureLocations {
        self.regex.capture_locations()
    }
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

