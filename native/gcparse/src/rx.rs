//! Python `re` patterns, compiled for the `regex` crate with Python's meaning.
//!
//! The patterns are written here as in the Python parser; `py()` rewrites what differs:
//! `\d`/`\s`/`\w` (and negations) become CPython's exact classes (pyuni.rs), `$` matches
//! before a final newline too, `\Z` is `\z`, and verbose patterns (re.X) lose their
//! whitespace and comments by Python's rules.  Lookarounds are not supported by the crate:
//! the few patterns that use them are rewritten by hand at their call sites.

use crate::pyuni::{RX_DECIMAL, RX_SPACE, RX_WORD};
use regex::{CaptureLocations, Captures, Match, Regex};
use std::sync::OnceLock;

const ASCII_DIGIT: &str = "0-9";
const ASCII_SPACE: &str = r" \t\n\r\x0b\x0c";
const ASCII_WORD: &str = "0-9A-Za-z_";

/// CPython's Unicode classes restricted to ASCII (what they match in an ASCII haystack):
/// `\s` includes \x1c-\x1f, unlike re.ASCII's.
const HAY_DIGIT: &str = "0-9";
const HAY_SPACE: &str = r"\t-\r\x1c-\x20";
const HAY_WORD: &str = "0-9A-Z_a-z";

/// How `\d`, `\s`, `\w` are translated.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Python str pattern: CPython's Unicode classes
    Unicode,
    /// re.ASCII
    Ascii,
    /// the Unicode pattern's twin for ASCII-only haystacks (same matches there)
    AsciiHay,
}

fn class_body(c: char, mode: Mode) -> Option<(&'static str, bool)> {
    if mode == Mode::AsciiHay {
        return match c {
            'd' => Some((HAY_DIGIT, false)),
            'D' => Some((HAY_DIGIT, true)),
            's' => Some((HAY_SPACE, false)),
            'S' => Some((HAY_SPACE, true)),
            'w' => Some((HAY_WORD, false)),
            'W' => Some((HAY_WORD, true)),
            _ => None,
        };
    }
    if mode == Mode::Ascii {
        return match c {
            'd' => Some((ASCII_DIGIT, false)),
            'D' => Some((ASCII_DIGIT, true)),
            's' => Some((ASCII_SPACE, false)),
            'S' => Some((ASCII_SPACE, true)),
            'w' => Some((ASCII_WORD, false)),
            'W' => Some((ASCII_WORD, true)),
            _ => None,
        };
    }
    match c {
        'd' => Some((RX_DECIMAL, false)),
        'D' => Some((RX_DECIMAL, true)),
        's' => Some((RX_SPACE, false)),
        'S' => Some((RX_SPACE, true)),
        'w' => Some((RX_WORD, false)),
        'W' => Some((RX_WORD, true)),
        _ => None,
    }
}

/// Translate a Python pattern (see module doc).
pub fn translate(pat: &str, verbose: bool) -> String {
    translate_full(pat, verbose, false)
}

/// Translate with re.X / re.ASCII flags.
pub fn translate_full(pat: &str, verbose: bool, ascii: bool) -> String {
    translate_mode(pat, verbose, if ascii { Mode::Ascii } else { Mode::Unicode })
}

fn translate_mode(pat: &str, verbose: bool, mode: Mode) -> String {
    let mut out = String::with_capacity(pat.len() * 2);
    let mut chars = pat.chars().peekable();
    let mut in_class = false;
    let mut class_start = false; // just after '[' or '[^' (a ']' there is literal)
    let mut after_set = false; // the last item in a class was an expanded \d, \s or \w
    while let Some(c) = chars.next() {
        let was_set = std::mem::replace(&mut after_set, false);
        if c == '\\' {
            let e = chars.next().expect("dangling backslash");
            if let Some((body, neg)) = class_body(e, mode) {
                after_set = in_class;
                if in_class {
                    if neg {
                        out.push_str("[^");
                        out.push_str(body);
                        out.push(']');
                    } else {
                        out.push_str(body);
                    }
                } else {
                    out.push_str(if neg { "[^" } else { "[" });
                    out.push_str(body);
                    out.push(']');
                }
            } else if e == 'Z' && !in_class {
                out.push_str(r"\z");
            } else if (e == 'b' || e == 'B') && !in_class && mode != Mode::Unicode {
                // ASCII word boundary: lets the DFAs run (Unicode \b makes them give up)
                out.push_str(if e == 'b' { r"(?-u:\b)" } else { r"(?-u:\B)" });
            } else if e == ' ' {
                out.push_str(r"\x20");
            } else if e == '#' {
                out.push_str(r"\#");
            } else {
                out.push('\\');
                out.push(e);
            }
            class_start = false;
            continue;
        }
        if in_class {
            if c == ']' && !class_start {
                in_class = false;
                out.push(']');
            } else if c == '[' {
                out.push_str(r"\[");
            } else if c == '^' && class_start && out.ends_with('[') {
                out.push('^');
                continue; // still at class start
            } else if c == ' ' {
                out.push_str(r"\x20");
            } else if c == '&' || c == '~' || c == '-' && (was_set || matches!(chars.peek(), Some(&'-') | Some(&']'))) {
                // set-operation syntax of the regex crate: literal in Python
                out.push('\\');
                out.push(c);
            } else {
                out.push(c);
            }
            class_start = false;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                class_start = true;
                out.push('[');
            }
            '$' => out.push_str(r"(?:\n?\z)"),
            ' ' | '\t' | '\n' | '\r' if verbose => {}
            '#' if verbose => {
                for c2 in chars.by_ref() {
                    if c2 == '\n' {
                        break;
                    }
                }
            }
            ' ' => out.push_str(r"\x20"),
            _ => out.push(c),
        }
    }
    out
}

/// A Python pattern compiled twice: with CPython's Unicode classes, and with those classes
/// cut down to ASCII for ASCII-only haystacks (nearly every GC log line).  The ASCII twin
/// has a far smaller NFA: the capture engines (one-pass DFA, bounded backtracker, whose
/// visited set is states x haystack bits, cleared per search) then cost a fraction.
/// Inherent methods pick the twin per haystack; anything else derefs to the Unicode one.
pub struct Re {
    pat: String,
    verbose: bool,
    mode: Mode,
    anchored: bool,
    // compiled on first use: most patterns never see a non-ASCII line (and many no line)
    uni: OnceLock<Regex>,
    hay: OnceLock<Regex>,
}

impl std::ops::Deref for Re {
    type Target = Regex;
    fn deref(&self) -> &Regex {
        self.uni()
    }
}

impl Re {
    fn compile(pat: &str, verbose: bool, mode: Mode, anchored: bool) -> Re {
        let re = Re { pat: pat.to_string(), verbose, mode, anchored, uni: OnceLock::new(), hay: OnceLock::new() };
        if cfg!(debug_assertions) {
            re.uni(); // bad patterns fail early in tests
        }
        re
    }
    fn build(&self, m: Mode) -> Regex {
        let t = translate_mode(&self.pat, self.verbose, m);
        let t = if self.anchored { format!("^(?:{t})") } else { t };
        Regex::new(&t).unwrap_or_else(|e| panic!("bad pattern {}: {e}", self.pat))
    }
    fn uni(&self) -> &Regex {
        self.uni.get_or_init(|| self.build(self.mode))
    }
    #[inline]
    fn pick(&self, s: &str) -> &Regex {
        if s.is_ascii() {
            let m = if self.mode == Mode::Ascii { Mode::Ascii } else { Mode::AsciiHay };
            self.hay.get_or_init(|| self.build(m))
        } else {
            self.uni()
        }
    }
    pub fn is_match(&self, s: &str) -> bool {
        self.pick(s).is_match(s)
    }
    pub fn find<'h>(&self, s: &'h str) -> Option<Match<'h>> {
        self.pick(s).find(s)
    }
    pub fn captures<'h>(&self, s: &'h str) -> Option<Captures<'h>> {
        self.pick(s).captures(s)
    }
    pub fn captures_at<'h>(&self, s: &'h str, start: usize) -> Option<Captures<'h>> {
        self.pick(s).captures_at(s, start)
    }
    pub fn captures_iter<'r, 'h>(&'r self, s: &'h str) -> regex::CaptureMatches<'r, 'h> {
        self.pick(s).captures_iter(s)
    }
    pub fn find_iter<'r, 'h>(&'r self, s: &'h str) -> regex::Matches<'r, 'h> {
        self.pick(s).find_iter(s)
    }
    /// Both twins have the same groups, so one CaptureLocations serves either.
    pub fn captures_read<'h>(&self, locs: &mut CaptureLocations, s: &'h str) -> Option<Match<'h>> {
        self.pick(s).captures_read(locs, s)
    }
    pub fn replace<'h, R: regex::Replacer>(&self, s: &'h str, rep: R) -> std::borrow::Cow<'h, str> {
        self.pick(s).replace(s, rep)
    }
    pub fn replace_all<'h, R: regex::Replacer>(&self, s: &'h str, rep: R) -> std::borrow::Cow<'h, str> {
        self.pick(s).replace_all(s, rep)
    }
    pub fn split<'r, 'h>(&'r self, s: &'h str) -> regex::Split<'r, 'h> {
        self.pick(s).split(s)
    }
}

/// A generated (pattern, verbose, ascii) spec (vocab.rs), with `edits` (literal
/// replacements, each required to apply: how lookarounds are taken out), optionally anchored.
pub fn spec(spec: (&str, bool, bool), edits: &[(&str, &str)], anchored: bool) -> Re {
    let mut pat = spec.0.to_string();
    for (a, b) in edits {
        assert!(pat.contains(a), "edit {a} not in {pat}");
        pat = pat.replacen(a, b, 1);
    }
    Re::compile(&pat, spec.1, if spec.2 { Mode::Ascii } else { Mode::Unicode }, anchored)
}

/// `re.compile(pat)`; `match` semantics (anchored at the start) come from `re_match`.
pub fn py(pat: &str) -> Re {
    Re::compile(pat, false, Mode::Unicode, false)
}

/// `re.compile(pat, re.X)`
pub fn py_x(pat: &str) -> Re {
    Re::compile(pat, true, Mode::Unicode, false)
}

/// `re.compile(pat)` anchored at the start, for `.match()` (Python's match is a search
/// anchored at the start of the string).
pub fn py_m(pat: &str) -> Re {
    Re::compile(pat, false, Mode::Unicode, true)
}

/// verbose + anchored
pub fn py_mx(pat: &str) -> Re {
    Re::compile(pat, true, Mode::Unicode, true)
}

/// Python's str.find on a char boundary-safe byte index.
pub fn next_char_boundary(s: &str, i: usize) -> usize {
    let mut j = i + 1;
    while j < s.len() && !s.is_char_boundary(j) {
        j += 1;
    }
    j
}

/// `pattern.finditer(s)` for a pattern that starts with a negative lookbehind of one
/// character (`(?<![...])`): matches whose start is preceded by a character of `bad` are
/// skipped, and the scan resumes one character later, as Python's engine does.
pub fn find_iter_lookbehind<'a>(
    re: &'a Re,
    s: &'a str,
    bad: fn(char) -> bool,
) -> impl Iterator<Item = regex::Captures<'a>> + 'a {
    let mut pos = 0usize;
    std::iter::from_fn(move || loop {
        if pos > s.len() {
            return None;
        }
        let caps = re.captures_at(s, pos)?;
        let m = caps.get(0).unwrap();
        let prev = s[..m.start()].chars().next_back();
        if prev.map_or(false, bad) {
            pos = next_char_boundary(s, m.start());
            continue;
        }
        pos = if m.end() > m.start() { m.end() } else { next_char_boundary(s, m.end()) };
        return Some(caps);
    })
}
