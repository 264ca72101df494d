//! Input bounds on a GC log's bytes, applied before decoding (the same bounds as
//! collectors/gc/limits.py's `BoundedLines`): a line longer than `max_line` bytes is cut at
//! that length (the rest of it skipped), and more than `max_blank` lines in a row that are
//! empty or only ASCII whitespace (Python's `not line.strip()`) are an error. Lines end as in
//! universal newlines ('\n', '\r\n', '\r'); the bounds hold across any chunking of the input.

use std::borrow::Cow;

/// More than `max_blank` blank lines in a row: not a GC log (the binding raises GcInputError).
#[derive(Debug, PartialEq, Eq)]
pub struct BlankRun;

pub struct LineBounds {
    max_line: usize,
    max_blank: u64,
    /// bytes of the current (unfinished) line so far, before any cut
    line_len: usize,
    /// the current line so far is only whitespace
    line_blank: bool,
    /// blank complete lines in a row
    run: u64,
    /// the last byte was a '\r' ending a line: a '\n' right after it belongs to it
    after_cr: bool,
}

/// bytes.strip()'s whitespace, less the line ends (never inside a line)
fn blank(seg: &[u8]) -> bool {
    seg.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\x0b' | b'\x0c'))
}

impl LineBounds {
    pub fn new(max_line: usize, max_blank: u64) -> LineBounds {
        LineBounds { max_line, max_blank, line_len: 0, line_blank: true, run: 0, after_cr: false }
    }

    /// `data` within the bounds: borrowed unless a line had to be cut (the usual case).
    pub fn apply<'a>(&mut self, data: &'a [u8]) -> Result<Cow<'a, [u8]>, BlankRun> {
        let mut out: Option<Vec<u8>> = None;
        let mut copied = 0; // data[..copied] is in `out` (or skipped)
        let mut pos = 0;
        let mut ends = memchr::memchr2_iter(b'\n', b'\r', data);
        loop {
            let end = ends.next();
            let stop = end.unwrap_or(data.len());
            if end.is_none() && stop == pos {
                break; // nothing left (a '\r' at the end may still pair with the next '\n')
            }
            if self.after_cr && end == Some(pos) && data[pos] == b'\n' {
                self.after_cr = false; // the '\n' of a '\r\n'
                pos += 1;
                continue;
            }
            self.after_cr = false;
            let seg = &data[pos..stop];
            let room = self.max_line.saturating_sub(self.line_len);
            if seg.len() > room {
                let o = out.get_or_insert_with(|| Vec::with_capacity(data.len()));
                o.extend_from_slice(&data[copied..pos + room]);
                copied = stop;
            }
            self.line_len += seg.len();
            self.line_blank = self.line_blank && blank(seg);
            let Some(end) = end else { break };
            self.end_line()?;
            self.after_cr = data[end] == b'\r';
            pos = end + 1;
        }
        Ok(match out {
            None => Cow::Borrowed(data),
            Some(mut o) => {
                o.extend_from_slice(&data[copied..]);
                Cow::Owned(o)
            }
        })
    }

    fn end_line(&mut self) -> Result<(), BlankRun> {
        self.run = if self.line_blank { self.run + 1 } else { 0 };
        self.line_len = 0;
        self.line_blank = true;
        if self.run > self.max_blank {
            return Err(BlankRun);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(b: &mut LineBounds, chunks: &[&[u8]]) -> Result<Vec<u8>, BlankRun> {
        let mut out = Vec::new();
        for c in chunks {
            out.extend_from_slice(&b.apply(c)?);
        }
        Ok(out)
    }

    #[test]
    fn cuts_long_lines_across_chunks() {
        let mut b = LineBounds::new(4, 10);
        assert_eq!(whole(&mut b, &[b"abcdefg\nab", b"cdef\r\nxy\rz"]).unwrap(), b"abcd\nabcd\r\nxy\rz");
        let mut b = LineBounds::new(4, 10);
        assert_eq!(whole(&mut b, &[b"abcd", b"\n", b"abcde"]).unwrap(), b"abcd\nabcd");
    }

    #[test]
    fn blank_runs_count_crlf_once_and_whitespace() {
        let mut b = LineBounds::new(4, 3);
        assert!(whole(&mut b, &[b"\r", b"\n \r\n\t\r\nx\n"]).is_ok());
        let mut b = LineBounds::new(4, 3);
        assert_eq!(whole(&mut b, &[b"\r", b"\n \r\n\t\r", b"\r"]), Err(BlankRun));
        let mut b = LineBounds::new(4, 3);
        assert!(whole(&mut b, &[b"\n\n\n", b"          \n"]).is_err()); // a long blank line is blank
    }
}
