//! Columnar events to Python without a copy: the Arrow buffers of columns.rs stay in a
//! `ColumnBuffers` object and Python gets their (address, size), which
//! collectors/gc/columnar.py wraps with `pa.foreign_buffer(address, size, base=owner)` (the
//! owner lives as long as any array over its buffers) and assembles with `Array.from_buffers`.
//! Copying the ~230 bytes a row into `bytes` objects cost a memcpy and a page fault per 4 KB.

use crate::columns::{Columns, Fixed, Patch, Strs};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The columns of one `to_py`, never changed afterwards (their buffers are lent to pyarrow).
#[pyclass(frozen, module = "brokerscope_gcparse._native")]
pub struct ColumnBuffers {
    c: Columns,
}

/// (address, size in bytes) of a buffer
fn buf<T>(v: &[T]) -> (usize, usize) {
    (v.as_ptr() as usize, std::mem::size_of_val(v))
}

fn fixed<T: Copy>(py: Python, c: &Fixed<T>) -> PyObject {
    (buf(&c.valid), buf(&c.values), c.nulls).into_py(py)
}

fn strs(py: Python, c: &Strs) -> PyObject {
    (buf(&c.valid), buf(&c.offsets), buf(&c.data), c.nulls).into_py(py)
}

/// `resolve(kind, payload)` turns a patch into its Python value (see py.rs).
pub trait Resolve {
    fn patch(&self, py: Python, p: &Patch) -> PyResult<PyObject>;
}

/// {name: buffers}: strings (valid, offsets, data, nulls), numbers (valid, values, nulls);
/// `source_line` has no validity bitmap (None).
fn buffers<'py>(py: Python<'py>, c: &Columns) -> PyResult<Bound<'py, PyDict>> {
    let cols = PyDict::new_bound(py);
    for (name, col) in crate::columns::STR_NAMES.iter().zip(&c.strs) {
        cols.set_item(name, strs(py, col))?;
    }
    for (name, col) in crate::columns::F64_NAMES.iter().zip(&c.f64s) {
        cols.set_item(name, fixed(py, col))?;
    }
    for (name, col) in crate::columns::KB_NAMES.iter().zip(&c.kbs) {
        cols.set_item(name, fixed(py, col))?;
    }
    cols.set_item("gc_id", fixed(py, &c.gc_id))?;
    cols.set_item("wall_time", fixed(py, &c.wall))?;
    let lines: PyObject = (py.None(), buf(&c.source_line), 0usize).into_py(py);
    cols.set_item("source_line", lines)?;
    Ok(cols)
}

/// [(row, kind, value)]; kind: "wall_time" | "gc_id" | a kb column name.
fn patches<'py>(py: Python<'py>, c: &Columns, r: &dyn Resolve) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty_bound(py);
    for (row, p) in &c.patches {
        let kind = match p {
            Patch::Wall(..) => "wall_time",
            Patch::GcId(_) => "gc_id",
            Patch::Kb(k, _) => crate::columns::KB_NAMES[*k],
        };
        out.append((row, kind, r.patch(py, p)?))?;
    }
    Ok(out)
}

/// (rows, {name: buffers}, [(row, kind, value)], owner of the buffers).
pub fn to_py(py: Python, c: Columns, r: &dyn Resolve) -> PyResult<PyObject> {
    let fixes = patches(py, &c, r)?;
    let owner = Py::new(py, ColumnBuffers { c })?;
    let c = &owner.get().c; // the buffers' addresses once they are in their owner
    Ok((c.rows, buffers(py, c)?, fixes, owner.clone_ref(py)).into_py(py))
}
