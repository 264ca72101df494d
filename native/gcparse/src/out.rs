//! Where the core's events go, in the order the parser completes them: a `Sink` (a
//! `Vec<Event>` on the GcEvent path, the Arrow `Columns` on the columnar path), reached
//! through `Out`, which applies `model.drop_implausible` to every event and counts them.

use crate::event::{drop_implausible, Event};
use crate::young::YoungRow;

pub trait Sink {
    /// A complete event (implausible values already dropped).
    fn event(&mut self, e: Event);
    /// A one-line young collection in compact form (all its values plausible).
    fn young(&mut self, y: YoungRow);
}

impl Sink for Vec<Event> {
    #[inline]
    fn event(&mut self, e: Event) {
        self.push(e);
    }
    #[inline]
    fn young(&mut self, y: YoungRow) {
        self.push(y.into_event());
    }
}

/// The handlers' view of a sink.
pub struct Out<'a> {
    sink: &'a mut dyn Sink,
    /// events emitted through this `Out`
    n: u64,
}

impl<'a> Out<'a> {
    pub fn new(sink: &'a mut dyn Sink) -> Out<'a> {
        Out { sink, n: 0 }
    }

    /// An event completed (the parser's `drop_implausible` of its new events).
    #[inline]
    pub fn push(&mut self, mut e: Event) {
        drop_implausible(std::slice::from_mut(&mut e));
        self.n += 1;
        self.sink.event(e);
    }

    /// A young row completed: straight to the sink, or as an event if a value is implausible.
    #[inline]
    pub fn young(&mut self, y: YoungRow) {
        if y.plausible() {
            self.n += 1;
            self.sink.young(y);
        } else {
            self.push(y.into_event());
        }
    }

    /// Events emitted so far.
    pub fn len(&self) -> u64 {
        self.n
    }
}
