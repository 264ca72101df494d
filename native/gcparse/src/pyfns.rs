//! CPython semantics the Python parser relies on: str.strip & co., str.isdigit/isdecimal/
//! isalpha, float()/int() of (unicode) digit strings, round-half-even sizes.  The Python parser
//! is the specification, so these follow CPython exactly (tables generated from it: pyuni.rs).

use crate::pyuni;

fn in_table(t: &[(u32, u32)], c: char) -> bool {
    let cp = c as u32;
    t.binary_search_by(|&(a, b)| {
        if b < cp {
            std::cmp::Ordering::Less
        } else if a > cp {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    })
    .is_ok()
}

#[inline]
pub fn is_space(c: char) -> bool {
    if c.is_ascii() {
        matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c' | '\x1c'..='\x1f')
    } else {
        in_table(pyuni::ISSPACE, c)
    }
}

#[inline]
pub fn is_decimal(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        in_table(pyuni::ISDECIMAL, c)
    }
}

#[inline]
pub fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        in_table(pyuni::ISDIGIT, c)
    }
}

#[inline]
pub fn is_alpha(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphabetic()
    } else {
        in_table(pyuni::ISALPHA, c)
    }
}

/// First character's str.isdigit() ('' -> false).
pub fn first_is_digit(s: &str) -> bool {
    s.chars().next().map_or(false, is_digit)
}

pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}
pub fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_space)
}
pub fn lstrip(s: &str) -> &str {
    s.trim_start_matches(is_space)
}
/// s.rstrip("\r\n")
pub fn rstrip_nl(s: &str) -> &str {
    s.trim_end_matches(['\r', '\n'])
}

/// Decimal value of a str.isdecimal() character.
fn decimal_value(c: char) -> Option<u32> {
    if c.is_ascii_digit() {
        return Some(c as u32 - '0' as u32);
    }
    if !is_decimal(c) {
        return None;
    }
    let cp = c as u32;
    let zeros = pyuni::DECIMAL_ZEROS;
    let i = zeros.partition_point(|&(z, _)| z <= cp);
    Some(cp - zeros[i - 1].0)
}

/// The ASCII form of a string of digits/signs/dots (unicode decimals mapped), as CPython's
/// float()/int() see it; None if it holds other non-ASCII characters.
fn ascii_digits(s: &str) -> Option<std::borrow::Cow<'_, str>> {
    if s.is_ascii() {
        return Some(std::borrow::Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            out.push(char::from_digit(decimal_value(c)?, 10)?);
        }
    }
    Some(std::borrow::Cow::Owned(out))
}

/// float(text) for the shapes the parser hands it (digits, '.', sign; surrounding
/// whitespace); None where CPython raises ValueError.
pub fn py_float(text: &str) -> Option<f64> {
    if let Some(v) = crate::fastnum::dec_f64(text.as_bytes()) {
        return Some(v); // the usual shape: digits and a dot, nothing to strip or map
    }
    let t = ascii_digits(strip(text))?;
    let t = t.as_ref();
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    // CPython accepts digits with one '.', at least one digit (and exponents, inf/nan,
    // underscores: never produced by the parser's patterns, refused here)
    let mut digits = 0;
    let mut dots = 0;
    for b in body.bytes() {
        match b {
            b'0'..=b'9' => digits += 1,
            b'.' => dots += 1,
            _ => return None,
        }
    }
    if digits == 0 || dots > 1 {
        return None;
    }
    t.parse::<f64>().ok()
}

/// _common.num: decimal comma accepted; a malformed number gives its longest numeric prefix.
pub fn num(text: &str) -> f64 {
    if let Some(v) = crate::fastnum::dec_f64(text.as_bytes()) {
        return v;
    }
    let t = text.replace(',', ".");
    if let Some(v) = py_float(&t) {
        return v;
    }
    // _NUM_PREFIX_RE = r"\d*\.?\d*" (unicode digits)
    let mut end = 0;
    let mut it = t.char_indices().peekable();
    while let Some(&(i, c)) = it.peek() {
        if is_decimal(c) {
            end = i + c.len_utf8();
            it.next();
        } else {
            break;
        }
    }
    if let Some(&(i, '.')) = it.peek() {
        end = i + 1;
        it.next();
        while let Some(&(i, c)) = it.peek() {
            if is_decimal(c) {
                end = i + c.len_utf8();
                it.next();
            } else {
                break;
            }
        }
    }
    let digits = &t[..end];
    if digits.trim_matches('.').is_empty() {
        return 0.0;
    }
    py_float(digits).unwrap_or(0.0)
}

/// An integer of the log (GC id, region count, K size, epoch ms) of any length, as Python's
/// int() gives it: small ones as i64, others as their canonical ASCII digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PyInt {
    Small(i64),
    Big(String),
}

impl PyInt {
    /// int(text) of a digit string (str.isdecimal characters), None if it is not one.
    pub fn parse(text: &str) -> Option<PyInt> {
        if let Some(v) = crate::fastnum::small_int(text.as_bytes()) {
            return Some(PyInt::Small(v));
        }
        let t = ascii_digits(strip(text))?;
        let t = t.as_ref();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let z = t.trim_start_matches('0');
        if z.len() <= 18 {
            return Some(PyInt::Small(if z.is_empty() { 0 } else { z.parse().ok()? }));
        }
        Some(PyInt::Big(z.to_string()))
    }
    pub fn small(&self) -> Option<i64> {
        match self {
            PyInt::Small(v) => Some(*v),
            PyInt::Big(_) => None,
        }
    }
    /// float(int) (inf when too large: CPython raises OverflowError there).
    pub fn to_f64(&self) -> f64 {
        match self {
            PyInt::Small(v) => *v as f64,
            PyInt::Big(s) => s.parse::<f64>().unwrap_or(f64::INFINITY),
        }
    }
}

/// A size in KiB, an exact Python int: small values computed here, others kept as an
/// expression that the Python side evaluates with Python ints (corrupt, huge numbers).
#[derive(Clone, Debug, PartialEq)]
pub enum Kb {
    Small(i64),
    /// _common.size_kb(text)
    SizeText(Box<str>),
    Int(PyInt),
    Add(Box<Kb>, Box<Kb>),
    Mul(Box<Kb>, Box<Kb>),
}

const SMALL_LIMIT: i64 = 1 << 53;

impl Kb {
    pub fn add(a: &Kb, b: &Kb) -> Kb {
        if let (Kb::Small(x), Kb::Small(y)) = (a, b) {
            if let Some(v) = x.checked_add(*y) {
                return Kb::Small(v);
            }
        }
        Kb::Add(Box::new(a.clone()), Box::new(b.clone()))
    }
    pub fn mul(a: &Kb, b: &Kb) -> Kb {
        if let (Kb::Small(x), Kb::Small(y)) = (a, b) {
            if let Some(v) = x.checked_mul(*y) {
                return Kb::Small(v);
            }
        }
        Kb::Mul(Box::new(a.clone()), Box::new(b.clone()))
    }
    pub fn from_int(v: &PyInt) -> Kb {
        match v {
            PyInt::Small(x) => Kb::Small(*x),
            b => Kb::Int(b.clone()),
        }
    }
    pub fn small(&self) -> Option<i64> {
        match self {
            Kb::Small(v) => Some(*v),
            _ => None,
        }
    }
    /// bool(value) in Python (region_kb truthiness).
    pub fn truthy(&self) -> bool {
        !matches!(self, Kb::Small(0))
    }
}

/// _common.size_kb: '24.0M' -> 24576, '1024K' -> 1024, '12345' -> 12345; None where CPython
/// raises ValueError (malformed number).
pub fn size_kb(text: &str) -> Option<Kb> {
    let t = strip(text);
    let last = t.chars().last()?;
    let (numtxt, unit) = match last {
        'B' => (rstrip(&t[..t.len() - 1]), 1.0 / 1024.0),
        'K' => (rstrip(&t[..t.len() - 1]), 1.0),
        'M' => (rstrip(&t[..t.len() - 1]), 1024.0),
        'G' => (rstrip(&t[..t.len() - 1]), 1048576.0),
        'T' => (rstrip(&t[..t.len() - 1]), 1073741824.0),
        _ => (t, 1.0),
    };
    let v = match crate::fastnum::dec_f64(numtxt.as_bytes()) {
        Some(v) => v,
        None => py_float(&numtxt.replace(',', "."))?,
    };
    let kb = v * unit;
    if kb.is_finite() {
        let r = kb.round_ties_even();
        if r.abs() < SMALL_LIMIT as f64 {
            return Some(Kb::Small(r as i64));
        }
    }
    Some(Kb::SizeText(t.into()))
}

/// _common.slug: 'Scan Root Regions' -> 'scan-root-regions'.
pub fn slug(name: &str) -> String {
    let lower = name.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut dash = false;
    for c in lower.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c);
        } else {
            dash = true;
        }
    }
    out
}

/// Python's round(x, 3).
pub fn round3(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    // CPython rounds the exact decimal value of x: format with enough digits and round
    // half-even on that string (what float.__round__ does via _Py_dg_dtoa mode 3)
    let s = format!("{:.3}", x);
    // Rust's {:.3} formats the exact binary value rounded half-to-even: same as CPython
    s.parse().unwrap_or(x)
}

/// re's \w: str.isalnum() or '_'.
#[inline]
pub fn is_word(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || c == '_'
    } else {
        in_table(pyuni::ISWORD, c)
    }
}
