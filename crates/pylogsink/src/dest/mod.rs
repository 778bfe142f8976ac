//! Destinations: where a line can wait, and how it reaches fd 2.
//!
//! A line either goes out now, to fd 2, or waits: as text in a [`Kept`]
//! buffer (a call's, or the process-wide queue), or as a structured record
//! for Python's `logging` ([`pending`]). [`route`] decides, as pure
//! functions of the situation; [`fd`] writes without ever blocking longer
//! than the caller allows. Nothing here knows about threads, calls or
//! settings, but the budget of what may wait ([`budget`]): the core passes
//! what it needs.

pub(crate) mod budget;
pub(crate) mod capture;
pub(crate) mod dropped;
pub(crate) mod fd;
pub(crate) mod in_flight;
pub(crate) mod kept;
pub(crate) mod patience;
pub(crate) mod pending;
pub(crate) mod prompt;
pub(crate) mod route;

pub(crate) use kept::{Kept, Taken};
pub(crate) use route::Sink;
