//! Python binding: `NativeParser` (feed lines or text chunks, flush, finish, stats), events
//! as tuples in GcEvent field order (collectors/gc/native.py turns them into GcEvent).

use crate::event::{Event, Wall};
use crate::pyfns::{Kb, PyInt};
use crate::Parser;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

/// A lone surrogate (only a Python str can hold one) is carried through the core as a
/// plane-16 private-use character and restored on the way out.
const SURR_BASE: u32 = 0x10F000;

fn to_rust(s: &Bound<PyString>) -> PyResult<(std::borrow::Cow<'static, str>, bool)> {
    if let Ok(t) = s.to_str() {
        return Ok((std::borrow::Cow::Owned(t.to_string()), false));
    }
    let py = s.py();
    let b = s.call_method1("encode", ("utf-16-le", "surrogatepass"))?;
    let bytes: Vec<u8> = b.extract()?;
    let units: Vec<u16> = bytes.chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    let mut out = String::new();
    for r in char::decode_utf16(units) {
        match r {
            Ok(c) => out.push(c),
            Err(e) => out.push(char::from_u32(SURR_BASE + (e.unpaired_surrogate() as u32 - 0xD800)).unwrap()),
        }
    }
    let _ = py;
    Ok((std::borrow::Cow::Owned(out), true))
}

#[pyclass(name = "NativeParser", module = "brokerscope_gcparse._native")]
pub struct PyParser {
    p: Parser,
    surrogates: bool,
    size_kb: PyObject,
    /// Python strings of repeated values (event types, collectors, causes, phases, flags):
    /// one object each instead of one per event
    interned: std::cell::RefCell<std::collections::HashMap<Box<str>, Py<PyString>>>,
    /// columns of collect_bytes, until take_columns
    collected: crate::columns::Columns,
    /// builds the exception raised for a blank run beyond the line bounds (set_line_bounds)
    blank_run_error: Option<PyObject>,
}

fn restore<'py>(py: Python<'py>, s: &str, surrogates: bool) -> PyResult<PyObject> {
    if !surrogates || !s.chars().any(|c| (SURR_BASE..SURR_BASE + 0x800).contains(&(c as u32))) {
        return Ok(PyString::new_bound(py, s).into_any().unbind());
    }
    let mut units: Vec<u16> = Vec::new();
    for c in s.chars() {
        let cp = c as u32;
        if (SURR_BASE..SURR_BASE + 0x800).contains(&cp) {
            units.push((0xD800 + cp - SURR_BASE) as u16);
        } else {
            let mut buf = [0u16; 2];
            units.extend_from_slice(c.encode_utf16(&mut buf));
        }
    }
    let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
    let b = pyo3::types::PyBytes::new_bound(py, &bytes);
    Ok(b.call_method1("decode", ("utf-16-le", "surrogatepass"))?.unbind())
}

impl crate::py_columns::Resolve for PyParser {
    /// wall: (the wall value as `event()` gives it, uptime, from_start); kb / gc_id: the value
    fn patch(&self, py: Python, p: &crate::columns::Patch) -> PyResult<PyObject> {
        use crate::columns::Patch;
        match p {
            Patch::Wall(w, up, fs) => Ok((self.wall(py, w)?, *up, *fs).into_py(py)),
            Patch::Kb(_, kb) => self.kb(py, &Some(kb.clone())),
            Patch::GcId(i) => self.int(py, i),
        }
    }
}

impl PyParser {
    /// The exception of a blank run beyond the bounds (as set_line_bounds was told to build it).
    fn bounded(&self, py: Python, fed: Result<(), crate::bounds::BlankRun>) -> PyResult<()> {
        if fed.is_ok() {
            return Ok(());
        }
        match &self.blank_run_error {
            Some(make) => Err(PyErr::from_value_bound(make.call0(py)?.into_bound(py))),
            None => Err(pyo3::exceptions::PyValueError::new_err("too many empty lines in a row")),
        }
    }

    fn int(&self, py: Python, v: &PyInt) -> PyResult<PyObject> {
        Ok(match v {
            PyInt::Small(x) => x.into_py(py),
            PyInt::Big(s) => py.get_type_bound::<pyo3::types::PyInt>().call1((s.as_str(),))?.unbind(),
        })
    }

    fn kb(&self, py: Python, v: &Option<Kb>) -> PyResult<PyObject> {
        let Some(v) = v else { return Ok(py.None()) };
        Ok(match v {
            Kb::Small(x) => x.into_py(py),
            Kb::SizeText(t) => self.size_kb.call1(py, (&**t,))?,
            Kb::Int(i) => self.int(py, i)?,
            Kb::Add(a, b) => {
                let (a, b) = (self.kb(py, &Some((**a).clone()))?, self.kb(py, &Some((**b).clone()))?);
                a.call_method1(py, "__add__", (b,))?
            }
            Kb::Mul(a, b) => {
                let (a, b) = (self.kb(py, &Some((**a).clone()))?, self.kb(py, &Some((**b).clone()))?);
                a.call_method1(py, "__mul__", (b,))?
            }
        })
    }

    fn opt_str(&self, py: Python, s: &Option<Box<str>>) -> PyResult<PyObject> {
        match s {
            None => Ok(py.None()),
            Some(t) => restore(py, t, self.surrogates),
        }
    }

    fn intern(&self, py: Python, s: &str) -> PyResult<PyObject> {
        if self.surrogates {
            return restore(py, s, true);
        }
        let mut m = self.interned.borrow_mut();
        if let Some(o) = m.get(s) {
            return Ok(o.clone_ref(py).into_any());
        }
        let o = PyString::new_bound(py, s).unbind();
        if m.len() < 4096 {
            m.insert(s.into(), o.clone_ref(py));
        }
        Ok(o.into_any())
    }

    fn opt_intern(&self, py: Python, s: &Option<crate::sstr::SStr>) -> PyResult<PyObject> {
        s.as_deref().map_or(Ok(py.None()), |t| self.intern(py, t))
    }

    fn wall(&self, py: Python, w: &Wall) -> PyResult<PyObject> {
        Ok(match w {
            Wall::None => py.None(),
            Wall::Micros(us) => us.into_py(py),
            Wall::Iso(t) => restore(py, t, self.surrogates)?,
            Wall::EpochMs(ms) => PyTuple::new_bound(py, [self.int(py, ms)?]).into_any().unbind(),
        })
    }

    fn event(&self, py: Python, e: &Event) -> PyResult<PyObject> {
        let flags = PyTuple::new_bound(py, e.flags.iter().map(|f| self.intern(py, f)).collect::<PyResult<Vec<_>>>()?);
        let items: Vec<PyObject> = vec![
            self.intern(py, &e.event_type)?,
            self.intern(py, &e.collector)?,
            self.wall(py, &e.wall)?,
            e.uptime_s.into_py(py),
            self.opt_intern(py, &e.cause)?,
            e.pause_ms.into_py(py),
            e.concurrent_ms.into_py(py),
            e.duration_ms.into_py(py),
            self.kb(py, &e.heap[0])?,
            self.kb(py, &e.heap[1])?,
            self.kb(py, &e.heap[2])?,
            self.kb(py, &e.young[0])?,
            self.kb(py, &e.young[1])?,
            self.kb(py, &e.young[2])?,
            self.kb(py, &e.old[0])?,
            self.kb(py, &e.old[1])?,
            self.kb(py, &e.old[2])?,
            self.kb(py, &e.meta[0])?,
            self.kb(py, &e.meta[1])?,
            self.kb(py, &e.meta[2])?,
            e.user_s.into_py(py),
            e.sys_s.into_py(py),
            e.real_s.into_py(py),
            match &e.gc_id {
                Some(g) => self.int(py, g)?,
                None => py.None(),
            },
            flags.into_any().unbind(),
            self.opt_intern(py, &e.phase)?,
            e.ttsp_ms.into_py(py),
            e.source_line.into_py(py),
            self.opt_str(py, &e.raw)?,
            e.wall_from_start.into_py(py),
        ];
        Ok(PyTuple::new_bound(py, items).into_any().unbind())
    }

    fn events(&self, py: Python, evs: &[Event]) -> PyResult<PyObject> {
        let list = PyList::empty_bound(py);
        for e in evs {
            list.append(self.event(py, e)?)?;
        }
        Ok(list.into_any().unbind())
    }
}

#[pymethods]
impl PyParser {
    /// NativeParser(collector, keep_raw, sample_limit, size_kb, date_hook)
    #[new]
    #[pyo3(signature = (collector, keep_raw, sample_limit, size_kb, date_hook))]
    fn new(collector: Option<&str>, keep_raw: bool, sample_limit: usize, size_kb: PyObject, date_hook: PyObject) -> Self {
        let mut p = Parser::new(collector, keep_raw, sample_limit);
        p.set_date_hook(Box::new(move |text: &str| {
            Python::with_gil(|py| date_hook.call1(py, (text,)).ok().and_then(|r| r.extract::<Option<i64>>(py).ok()).flatten())
        }));
        PyParser {
            p,
            surrogates: false,
            size_kb,
            interned: Default::default(),
            collected: Default::default(),
            blank_run_error: None,
        }
    }

    /// Bounds on byte input from now on (collectors/gc/limits.py): lines cut at `max_line`
    /// bytes; more than `max_blank` blank lines in a row raise the exception `error()` returns.
    fn set_line_bounds(&mut self, max_line: usize, max_blank: u64, error: PyObject) {
        self.p.set_line_bounds(max_line, max_blank);
        self.blank_run_error = Some(error);
    }

    /// Feed one line; returns the events it completed (tuples).
    #[pyo3(signature = (line, line_no=None))]
    fn feed(&mut self, py: Python, line: &Bound<PyString>, line_no: Option<u64>) -> PyResult<PyObject> {
        let (text, surr) = to_rust(line)?;
        self.surrogates |= surr;
        let mut out = Vec::new();
        self.p.feed(&text, line_no, &mut out);
        if out.is_empty() {
            return Ok(PyList::empty_bound(py).into_any().unbind());
        }
        self.events(py, &out)
    }

    /// Feed decoded text of any chunking (universal newlines); `end` feeds a last partial line.
    #[pyo3(signature = (text, end=false))]
    fn feed_text(&mut self, py: Python, text: &Bound<PyString>, end: bool) -> PyResult<PyObject> {
        let (t, surr) = to_rust(text)?;
        self.surrogates |= surr;
        let mut out = Vec::new();
        py.allow_threads(|| {
            self.p.feed_text(&t, &mut out);
            if end {
                self.p.end_text(&mut out);
            }
        });
        self.events(py, &out)
    }

    /// Feed raw bytes (UTF-8, invalid sequences replaced as Python's errors='replace').
    #[pyo3(signature = (data, end=false))]
    fn feed_bytes(&mut self, py: Python, data: &[u8], end: bool) -> PyResult<PyObject> {
        let mut out = Vec::new();
        let fed = py.allow_threads(|| {
            self.p.feed_bytes(data, &mut out)?;
            if end {
                self.p.end_text(&mut out);
            }
            Ok(())
        });
        self.bounded(py, fed)?;
        self.events(py, &out)
    }

    /// Bytes as feed_bytes, events as columns (see py_columns.rs); byte input only.
    #[pyo3(signature = (data, end=false))]
    fn feed_bytes_columns(&mut self, py: Python, data: &[u8], end: bool) -> PyResult<PyObject> {
        let mut c = crate::columns::Columns::default();
        let fed = py.allow_threads(|| crate::columns::feed_bytes(&mut self.p, data, end, &mut c));
        self.bounded(py, fed)?;
        crate::py_columns::to_py(py, c, self)
    }

    /// `finish`, events as columns.
    fn finish_columns(&mut self, py: Python) -> PyResult<PyObject> {
        let mut c = crate::columns::Columns::default();
        self.p.finish(&mut c);
        crate::py_columns::to_py(py, c, self)
    }

    /// As feed_bytes_columns, but the columns are kept in the parser and grow over calls
    /// (one batch for a whole file, no concatenation in Python): see take_columns.
    #[pyo3(signature = (data, end=false))]
    fn collect_bytes(&mut self, py: Python, data: &[u8], end: bool) -> PyResult<()> {
        let mut c = std::mem::take(&mut self.collected);
        let fed = py.allow_threads(|| crate::columns::feed_bytes(&mut self.p, data, end, &mut c));
        self.collected = c;
        self.bounded(py, fed)
    }

    /// The columns collected so far (after `finish` when `finish` is true), as
    /// feed_bytes_columns returns them; the parser's collection starts again empty.
    #[pyo3(signature = (finish=false))]
    fn take_columns(&mut self, py: Python, finish: bool) -> PyResult<PyObject> {
        let mut c = std::mem::take(&mut self.collected);
        if finish {
            self.p.finish(&mut c);
        }
        crate::py_columns::to_py(py, c, self)
    }

    fn flush(&mut self, py: Python) -> PyResult<PyObject> {
        let mut out = Vec::new();
        self.p.flush(&mut out);
        self.events(py, &out)
    }

    fn finish(&mut self, py: Python) -> PyResult<PyObject> {
        let mut out = Vec::new();
        self.p.finish(&mut out);
        self.events(py, &out)
    }

    /// (lines_total, lines_event, lines_ignored, lines_unknown, events, incomplete,
    ///  unknown_sample, n_unified, n_legacy)
    fn stats(&self, py: Python) -> PyResult<PyObject> {
        let s = &self.p.o.stats;
        let sample = PyList::empty_bound(py);
        for (n, t) in &s.unknown_sample {
            sample.append((n, restore(py, t, self.surrogates)?))?;
        }
        let (u, l) = self.p.formats();
        Ok((s.lines_total, s.lines_event, s.lines_ignored, s.lines_unknown, s.events, s.incomplete_events, sample, u, l)
            .into_py(py))
    }

    /// ((uptime, wall, from_start), (uptime, wall, from_start)) or None
    fn time_span(&self, py: Python) -> PyResult<PyObject> {
        let Some((a, b)) = self.p.time_span() else { return Ok(py.None()) };
        let one = |e: &Event| -> PyResult<PyObject> {
            Ok((e.uptime_s, self.wall(py, &e.wall)?, e.wall_from_start).into_py(py))
        };
        Ok((one(&a)?, one(&b)?).into_py(py))
    }

    #[getter]
    fn collector(&self) -> String {
        self.p.o.collector.to_string()
    }
}

/// Hash of the crate's sources at build time (infra/setup.sh skips an up-to-date install).
const SOURCE_HASH: &str = env!("GCPARSE_SOURCE_HASH");

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyParser>()?;
    m.add_class::<crate::py_columns::ColumnBuffers>()?;
    m.add("SOURCE_HASH", SOURCE_HASH)?;
    Ok(())
}
