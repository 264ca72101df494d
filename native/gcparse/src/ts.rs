//! Time stamps: ISO date stamps (the common shape parsed here, others by CPython through a
//! hook), epoch milliseconds, and the unified handler's lazily converted line time stamps.

use crate::event::Wall;
use crate::pyfns::{num, py_float, round3, PyInt};
use crate::sstr::SStr;

/// Parses a date stamp CPython's way (the binding's hook calls `_common.parse_datestamp`):
/// microseconds since the epoch, UTC.
pub type DateHook = Box<dyn Fn(&str) -> Option<i64> + Send>;

#[inline(always)]
fn digits(b: &[u8]) -> Option<i64> {
    let mut v = 0i64;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as i64;
    }
    (!b.is_empty()).then_some(v)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn month_days(y: i64, m: i64) -> i64 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.f{1,9}][Z|+HH:MM|+HHMM]` (after ',' -> '.'), the shape JVMs write;
/// None for anything else (the caller then asks CPython).  ',' is read as '.' where '.' may
/// stand (the fraction) and refused where neither may: the text need not be rewritten first.
pub fn iso_strict(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (h, mi, s) = (digits(&b[11..13])?, digits(&b[14..16])?, digits(&b[17..19])?);
    // years 1 and 9999 can leave datetime's range once converted to UTC: CPython decides
    if !(2..=9998).contains(&y) || !(1..=12).contains(&mo) || d < 1 || d > month_days(y, mo) {
        return None;
    }
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let mut i = 19;
    let mut us = 0i64;
    if i < b.len() && (b[i] == b'.' || b[i] == b',') {
        let start = i + 1;
        let mut j = start;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        let n = j - start;
        if n == 0 || n > 9 {
            return None;
        }
        let f = &b[start..start + n.min(6)];
        us = digits(f)? * 10i64.pow(6 - f.len() as u32);
        i = j;
    }
    let mut off = 0i64;
    if i < b.len() {
        match b[i] {
            b'Z' if i + 1 == b.len() => {}
            b'+' | b'-' => {
                let sign = if b[i] == b'+' { 1 } else { -1 };
                let r = &b[i + 1..];
                let (oh, om) = match r.len() {
                    5 if r[2] == b':' => (digits(&r[0..2])?, digits(&r[3..5])?),
                    4 => (digits(&r[0..2])?, digits(&r[2..4])?),
                    _ => return None,
                };
                if oh > 23 || om > 59 {
                    return None;
                }
                off = sign * (oh * 3600 + om * 60);
            }
            _ => return None,
        }
    }
    let secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - off;
    Some(secs * 1_000_000 + us)
}

/// _common.parse_datestamp as a Wall: the common shape here, others left to CPython.
pub fn wall_of_date(text: &str) -> Wall {
    match iso_strict(text) {
        Some(us) => Wall::Micros(us),
        None => Wall::Iso(text.into()),
    }
}

/// Microseconds of a date stamp (for durations): strict shape here, else the hook.
pub fn date_micros(text: &str, hook: Option<&DateHook>) -> Option<i64> {
    iso_strict(text).or_else(|| hook.and_then(|h| h(text)))
}

/// _common.epoch_ms_to_dt(ms) as a Wall.
pub fn wall_of_epoch_ms(ms: &PyInt) -> Wall {
    // below 2**31 s, ms / 1000.0 is within 0.25 us of the exact value: CPython's rounding to
    // the microsecond gives ms * 1000 exactly
    match ms {
        PyInt::Small(v) if *v < (1i64 << 31) * 1000 => Wall::Micros(v * 1000),
        _ => Wall::EpochMs(ms.clone()),
    }
}

/// A unified line's time stamp: (wall date stamp, wall epoch ms, uptime), as `_ts` returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Ts {
    pub wall: Option<SStr>,
    pub wallms: Option<SStr>,
    /// uptime text ('12.345', num() applies) or seconds already computed
    pub up: Option<Up>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Up {
    Text(SStr),
    Secs(f64),
}

impl Up {
    pub fn value(&self) -> f64 {
        match self {
            Up::Text(t) => num(t),
            Up::Secs(v) => *v,
        }
    }
    pub fn from_ms_text(t: &str, div: f64) -> Up {
        // float(m.group(...)) / 1000.0 -- float() of a \d+ group always succeeds
        Up::Secs(py_float(t).unwrap_or(f64::NAN) / div)
    }
}

/// UnifiedHandler._elapsed_ms: milliseconds between two time stamps (uptime, else wall).
pub fn elapsed_ms(a: Option<&Ts>, b: Option<&Ts>, hook: Option<&DateHook>) -> Option<f64> {
    let (a, b) = (a?, b?);
    if let (Some(ua), Some(ub)) = (&a.up, &b.up) {
        return Some(round3((ub.value() - ua.value()) * 1000.0));
    }
    if let (Some(wa), Some(wb)) = (&a.wall, &b.wall) {
        if !wa.is_empty() && !wb.is_empty() {
            if let (Some(x), Some(y)) = (date_micros(wa, hook), date_micros(wb, hook)) {
                let d = (y - x) as f64 / 1e6;
                return Some(round3(d * 1000.0));
            }
        }
    }
    if let (Some(ma), Some(mb)) = (&a.wallms, &b.wallms) {
        if !ma.is_empty() && !mb.is_empty() {
            let (x, y) = (PyInt::parse(ma)?, PyInt::parse(mb)?);
            return match (x, y) {
                (PyInt::Small(x), PyInt::Small(y)) => Some((y - x) as f64),
                (x, y) => Some(y.to_f64() - x.to_f64()),
            };
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comma_is_read_as_the_point_it_replaces() {
        let cases = [
            "2012-10-19T18:28:46.210+0100", "2012-10-19T18:28:46,210+0100", "2012-10-19T18:28:46,210",
            "2012,10-19T18:28:46.210+0100", "2012-10-19T18:28:46.210+01,00", "2012-10-19T18:28:46,",
            "2012-10-19T18:28:46,2,1", "2012-10-19T18:28:46.210+01:00", "2024-02-29T23:59:59,999999999Z",
            "2023-02-29T00:00:00.000+0000", "2012-10-19T18:28:46", "2012-10-19T18:28",
        ];
        for t in cases {
            assert_eq!(iso_strict(t), iso_strict(&t.replace(',', ".")), "{t}");
        }
        assert_eq!(iso_strict("1970-01-02T00:00:00,5Z"), Some(86_400_500_000));
        assert_eq!(iso_strict("2012-10-19T18:28:46.210+0100"), Some(1_350_667_726_210_000));
    }
}
