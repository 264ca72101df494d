//! Fast, exact number parsing for the shapes GC logs write (`123`, `0.0084810`).
//!
//! A decimal `m / 10^k` with m < 2^53 and k <= 22 is two exactly representable doubles, and
//! IEEE division rounds their quotient correctly: the result is the correctly rounded value
//! of the decimal, i.e. what `str::parse::<f64>` (and CPython's float()) give.  Anything else
//! returns None and the caller takes the general parser.

const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `\d+(\.\d+)?` or `\d+\.` or `\.\d+` as f64, exactly; None for any other text or when the
/// fast path cannot guarantee exactness.
#[inline]
pub fn dec_f64(s: &[u8]) -> Option<f64> {
    let mut m: u64 = 0;
    let mut digits = 0usize;
    let mut frac: Option<usize> = None;
    for (i, &c) in s.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                if digits >= 19 {
                    return None;
                }
                m = m * 10 + (c - b'0') as u64;
                if m != 0 {
                    digits += 1;
                }
            }
            b'.' if frac.is_none() => frac = Some(i + 1),
            _ => return None,
        }
    }
    let k = frac.map_or(0, |f| s.len() - f);
    let int_digits = s.len() - k - frac.is_some() as usize;
    if int_digits + k == 0 {
        return None;
    }
    ratio(m, k)
}

/// m / 10^k, when that is the decimal's correctly rounded value (see above).
#[inline(always)]
pub fn ratio(m: u64, k: usize) -> Option<f64> {
    (m < 1 << 53 && k <= 22).then(|| m as f64 / POW10[k])
}

/// `str::parse::<f64>` of a decimal (fast path first).
#[inline]
pub fn parse_f64(s: &str) -> Option<f64> {
    dec_f64(s.as_bytes()).or_else(|| s.parse().ok())
}

/// `\d{1,18}` as i64; None otherwise.
#[inline]
pub fn small_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (c - b'0') as i64;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_std() {
        let cases = [
            "0", "1", "0.0084810", "17024", "2.193", "0.00", "123.456789012345", "9007199254740991",
            "9007199254740993", "0.1", "0.3", "1.", ".5", "00012.5000", "4503599627370497.5",
            "1234567890123456789", "0.0000000000000000000001", "0.00000000000000000000001",
        ];
        for c in cases {
            if let Some(v) = dec_f64(c.as_bytes()) {
                assert_eq!(v.to_bits(), c.parse::<f64>().unwrap().to_bits(), "{c}");
            }
            assert_eq!(parse_f64(c), c.parse::<f64>().ok(), "{c}");
        }
        for bad in ["", ".", "1.2.3", "1e5", "-1", " 1", "1,5"] {
            assert_eq!(dec_f64(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn random_decimals() {
        let mut x: u64 = 0x9E3779B97F4A7C15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = (x % 19 + 1) as usize;
            let s = format!("{:019}", x % 10_000_000_000_000_000_000);
            let s = &s[19 - digits..];
            let dot = (x >> 40) as usize % (digits + 1);
            let t = format!("{}.{}", &s[..dot], &s[dot..]);
            if let Some(v) = dec_f64(t.as_bytes()) {
                assert_eq!(v.to_bits(), t.parse::<f64>().unwrap().to_bits(), "{t}");
            }
        }
    }
}

