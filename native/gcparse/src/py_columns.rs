//! Columnar events to Python: the Arrow buffers of columns.rs as `bytes`, assembled into a
//! pyarrow RecordBatch by collectors/gc/native.py (`pa.Array.from_buffers`).

use crate::columns::{Columns, Fixed, Patch, Strs};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

fn raw<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: T is a plain number (f64, i64, i32): any byte view of it is valid
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

fn bytes<'py>(py: Python<'py>, b: &[u8]) -> PyObject {
    PyBytes::new_bound(py, b).into_any().unbind()
}

fn fixed<T: Copy>(py: Python, c: &Fixed<T>) -> PyObject {
    (bytes(py, &c.valid), bytes(py, raw(&c.values)), c.nulls).into_py(py)
}

fn strs(py: Python, c: &Strs) -> PyObject {
    (bytes(py, &c.valid), bytes(py, raw(&c.offsets)), bytes(py, &c.data), c.nulls).into_py(py)
}

/// `resolve(kind, payload)` turns a patch into its Python value (see py.rs).
pub trait Resolve {
    fn patch(&self, py: Python, p: &Patch) -> PyResult<PyObject>;
}

/// (rows, {name: buffers}, [(row, kind, value)]); kind: "wall" | "gc_id" | a kb column name.
pub fn to_py(py: Python, c: &Columns, r: &dyn Resolve) -> PyResult<PyObject> {
    let cols = pyo3::types::PyDict::new_bound(py);
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
    let lines: PyObject = (py.None(), bytes(py, raw(&c.source_line)), 0usize).into_py(py);
    cols.set_item("source_line", lines)?;
    let patches = PyList::empty_bound(py);
    for (row, p) in &c.patches {
        let kind = match p {
            Patch::Wall(..) => "wall_time",
            Patch::GcId(_) => "gc_id",
            Patch::Kb(k, _) => crate::columns::KB_NAMES[*k],
        };
        patches.append((row, kind, r.patch(py, p)?))?;
    }
    Ok((c.rows, cols, patches).into_py(py))
}
