//! Python `re` patterns, compiled for the `regex` crate with Python's meaning.
//!
//! The patterns are written here as in the Python parser; `py()` rewrites what differs:
//! `\d`/`\s`/`\w` (and negations) become CPython's exact classes (pyuni.rs), `$` matches
//! before a final newline too, `\Z` is `\z`, and verbose patterns (re.X) lose their
//! whitespace and comments by Python's rules.  Lookarounds are not supported by the crate:
//! the few patterns that use them are rewritten by hand at their call sites.

use crate::pyuni::{RX_DECIMAL, RX_SPACE, RX_WORD};
use regex::Regex;

const ASCII_DIGIT: &str = "0-9";
const ASCII_SPACE: &str = r" \t\n\r\x0b\x0c";
const ASCII_WORD: &str = "0-9A-Za-z_";

fn class_body(c: char, ascii: bool) -> Option<(&'static str, bool)> {
    if ascii {
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
    let mut out = String::with_capacity(pat.len() * 2);
    let mut chars = pat.chars().peekable();
    let mut in_class = false;
    let mut class_start = false; // just after '[' or '[^' (a ']' there is literal)
    let mut after_set = false; // the last item in a class was an expanded \d, \s or \w
    while let Some(c) = chars.next() {
        let was_set = std::mem::replace(&mut after_set, false);
        if c == '\\' {
            let e = chars.next().expect("dangling backslash");
            if let Some((body, neg)) = class_body(e, ascii) {
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

/// A generated (pattern, verbose, ascii) spec (vocab.rs), with `edits` (literal
/// replacements, each required to apply: how lookarounds are taken out), optionally anchored.
pub fn spec(spec: (&str, bool, bool), edits: &[(&str, &str)], anchored: bool) -> Regex {
    let mut pat = spec.0.to_string();
    for (a, b) in edits {
        assert!(pat.contains(a), "edit {a} not in {pat}");
        pat = pat.replacen(a, b, 1);
    }
    let t = translate_full(&pat, spec.1, spec.2);
    let t = if anchored { format!("^(?:{t})") } else { t };
    Regex::new(&t).unwrap_or_else(|e| panic!("bad pattern {pat}: {e}"))
}

/// `re.compile(pat)`; `match` semantics (anchored at the start) come from `re_match`.
pub fn py(pat: &str) -> Regex {
    Regex::new(&translate(pat, false)).unwrap_or_else(|e| panic!("bad pattern {pat}: {e}"))
}

/// `re.compile(pat, re.X)`
pub fn py_x(pat: &str) -> Regex {
    Regex::new(&translate(pat, true)).unwrap_or_else(|e| panic!("bad pattern {pat}: {e}"))
}

/// `re.compile(pat)` anchored at the start, for `.match()` (Python's match is a search
/// anchored at the start of the string).
pub fn py_m(pat: &str) -> Regex {
    Regex::new(&format!("^(?:{})", translate(pat, false)))
        .unwrap_or_else(|e| panic!("bad pattern {pat}: {e}"))
}

/// verbose + anchored
pub fn py_mx(pat: &str) -> Regex {
    Regex::new(&format!("^(?:{})", translate(pat, true)))
        .unwrap_or_else(|e| panic!("bad pattern {pat}: {e}"))
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
    re: &'a Regex,
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
