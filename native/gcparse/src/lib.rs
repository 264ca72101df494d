//! brokerscope_gcparse: native core of brokerscope's GC log parser.  `collectors/gc` (Python)
//! is the specification; this crate produces the same events and line accounting.

pub mod bounds;
pub mod columns;
pub mod core;
pub mod event;
pub mod fastnum;
pub mod layout;
pub mod legacy;
pub mod legacy_fast;
pub mod legacy_record;
pub mod legacy_res;
pub mod legacy_shortcuts;
pub mod out;
pub mod pyfns;
pub mod pyuni;
pub mod rx;
pub mod sstr;
pub mod tagset;
pub mod ts;
pub mod unified;
pub mod unified_concurrent;
pub mod unified_gc;
pub mod unified_gc_match;
pub mod unified_pause;
pub mod unified_scan;
pub mod unified_shenandoah;
pub mod unified_zgc;
pub mod vocab;
pub mod young;

#[cfg(feature = "python")]
mod py;
#[cfg(feature = "python")]
mod py_columns;

pub use crate::core::Parser;
pub use crate::event::{Event, Stats};
