//! `SStr`: an immutable string kept inline when short (event types, phases, causes, time
//! stamp texts are nearly all <= 46 bytes), so that building an event or a time stamp does
//! not allocate.  Longer strings go to the heap.

use std::fmt;
use std::ops::Deref;

const CAP: usize = 46;

#[derive(Clone)]
pub enum SStr {
    Inline(u8, [u8; CAP]),
    Heap(Box<str>),
}

impl SStr {
    #[inline]
    pub fn new(s: &str) -> SStr {
        if s.len() <= CAP {
            let mut buf = [0u8; CAP];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            SStr::Inline(s.len() as u8, buf)
        } else {
            SStr::Heap(s.into())
        }
    }
    #[inline]
    pub fn as_str(&self) -> &str {
        match self {
            // SAFETY: the first `n` bytes were copied from a whole &str (see `new`)
            SStr::Inline(n, buf) => unsafe { std::str::from_utf8_unchecked(&buf[..*n as usize]) },
            SStr::Heap(b) => b,
        }
    }
}

impl Deref for SStr {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for SStr {
    #[inline]
    fn from(s: &str) -> SStr {
        SStr::new(s)
    }
}

impl From<String> for SStr {
    fn from(s: String) -> SStr {
        SStr::new(&s)
    }
}

impl From<&String> for SStr {
    fn from(s: &String) -> SStr {
        SStr::new(s)
    }
}

impl From<Box<str>> for SStr {
    fn from(s: Box<str>) -> SStr {
        if s.len() <= CAP { SStr::new(&s) } else { SStr::Heap(s) }
    }
}

impl PartialEq for SStr {
    fn eq(&self, other: &SStr) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<str> for SStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for SStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for SStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}
