//! Records waiting for Python's `logging`: structured, in order, capped.
//!
//! With the `logging` destination a record cannot be handed over when it
//! is logged (that would run Python in the log function), so it waits as
//! data, not text: `logging` wants the level, the target, the file and line
//! and the time apart. Like the text buffers, a buffer keeps its newest
//! records within a budget ([`budget`](super::budget): 50,000 records
//! within 16 MiB unless set otherwise), and counts those it left out so that
//! one note can say so where they were.

use super::budget;
use super::kept::{left_out_note, Limit};
use crate::record::fields::{message_text, OwnedFields};
use crate::record::format::format_record;
use crate::record::{Level, Record};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::SystemTime;

/// The budget in force: records, bytes.
fn in_force() -> (usize, usize) {
    let budget = budget::get();
    (budget.records, budget.record_bytes)
}

/// The budget in force, as notes say it.
pub(crate) fn budget_limit() -> Limit {
    let (records, bytes) = in_force();
    Limit::Records(records, bytes)
}

/// One record as `logging` will get it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PendingRecord {
    pub level: Level,
    pub target: Box<str>,
    pub file: Box<str>,
    pub line: u32,
    /// The message, escaped as on stderr, with its span context and
    /// fields written in as on stderr.
    pub message: String,
    /// The fields, for the `LogRecord`'s attributes; `None` for a plain
    /// record.
    pub fields: Option<Box<OwnedFields>>,
    /// When it was logged.
    pub created: SystemTime,
    /// The OS thread that logged it (`pthread_self`, which is also what
    /// Python's `threading.get_ident` returns), and that thread's name.
    pub thread: u64,
    pub thread_name: Arc<str>,
    /// That thread's id in the OS (Python's `Thread.native_id`), which
    /// tells it from a later thread given the same `thread`.
    pub native_id: u64,
    /// Whether that thread had a Python thread state (a `threading`
    /// thread, or one attached to the interpreter) when it first logged:
    /// only then is its name looked up among Python's threads.
    pub python: bool,
}

/// Who logged a record: [`PendingRecord`]'s `thread`, `thread_name` and
/// `native_id`, worked out once per thread.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Identity {
    pub thread: u64,
    pub name: Arc<str>,
    pub native_id: u64,
    pub python: bool,
}

impl PendingRecord {
    pub(crate) fn new(record: &Record<'_>, created: SystemTime, thread: Identity) -> Self {
        let mut message = Vec::with_capacity(record.message.len());
        message_text(&mut message, record.message, record.fields);
        PendingRecord {
            level: record.level,
            target: record.target.into(),
            file: record.file.into(),
            line: record.line,
            // escape_into writes valid UTF-8 only.
            message: String::from_utf8(message)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            fields: record
                .fields
                .filter(|f| !f.is_empty())
                .map(|f| Box::new(OwnedFields::new(f))),
            created,
            thread: thread.thread,
            thread_name: thread.name,
            native_id: thread.native_id,
            python: thread.python,
        }
    }

    /// The bytes it counts for against the budget: the most that its text
    /// ([`to_text`](PendingRecord::to_text)) takes.
    pub(crate) fn size(&self) -> usize {
        let fields = self.fields.as_ref().map_or(0, |f| f.size());
        self.message.len() + self.target.len() + self.file.len() + 64 + fields
    }

    /// Cuts the message so that the record counts for at most `cap` bytes
    /// (what its fields count for stays), and says so at its end, as a
    /// line longer than a text buffer is cut with a note.
    fn fit(&mut self, cap: usize) {
        let size = self.size();
        if size <= cap {
            return;
        }
        const NOTE_ROOM: usize = 96;
        let mut keep = self.message.len().saturating_sub(size - cap + NOTE_ROOM);
        while !self.message.is_char_boundary(keep) {
            keep -= 1;
        }
        let cut = self.message.len() - keep;
        self.message.truncate(keep);
        self.message.push_str(&format!(
            " [pylogsink] cut: {cut} bytes left out, more than the budget of {cap} bytes"
        ));
    }

    /// The record as a text line, for where Python can no longer take it.
    pub(crate) fn to_text(&self, out: &mut Vec<u8>) {
        let record = Record {
            level: self.level,
            target: &self.target,
            file: &self.file,
            line: self.line,
            message: b"",
            fields: None,
        };
        format_record(out, self.created, &record, false);
        // The message is escaped already: put it in as it is.
        out.pop();
        out.extend_from_slice(self.message.as_bytes());
        out.push(b'\n');
    }
}

/// Records waiting, the newest kept within the budget.
#[derive(Debug)]
pub(crate) struct Pending {
    records: VecDeque<PendingRecord>,
    bytes: usize,
    /// A budget of its own (in tests); the one in force ([`budget`]) if
    /// none.
    own: Option<(usize, usize)>,
    /// Records left out (the oldest ones), and the bytes they counted
    /// for against the budget ([`PendingRecord::size`]).
    pub left_out: u64,
    pub left_out_bytes: u64,
}

/// What [`Pending::take`] hands over.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub records: Vec<PendingRecord>,
    pub left_out: u64,
    pub left_out_bytes: u64,
}

impl Batch {
    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty() && self.left_out == 0
    }

    /// The note that stands where left-out records were, if any.
    pub(crate) fn note(&self) -> Option<String> {
        (self.left_out > 0)
            .then(|| left_out_note(self.left_out, "record", self.left_out_bytes, budget_limit()))
    }

    /// Hands each record of the batch to `f` as a text line for fd 2, the
    /// note first.
    pub(crate) fn each_line(&self, mut f: impl FnMut(&[u8])) {
        let mut line = Vec::new();
        if let Some(note) = self.note() {
            line.extend_from_slice(format!("[pylogsink] {note}\n").as_bytes());
            f(&line);
        }
        for record in &self.records {
            line.clear();
            record.to_text(&mut line);
            f(&line);
        }
    }

    /// The batch as text lines, note first, for fd 2.
    pub(crate) fn to_text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.each_line(|line| out.extend_from_slice(line));
        out
    }
}

impl Pending {
    /// An empty buffer under the budget in force.
    pub(crate) const fn new() -> Pending {
        Pending {
            records: VecDeque::new(),
            bytes: 0,
            own: None,
            left_out: 0,
            left_out_bytes: 0,
        }
    }

    /// Forgets the records and the note, which a signal handler wrote for
    /// a process that may live on. Freeing is not async-signal-safe: the
    /// records' memory is leaked (a few KiB, once per raised signal).
    pub(crate) fn forget_at_crash(&mut self) {
        std::mem::forget(std::mem::take(&mut self.records));
        self.bytes = 0;
        self.left_out = 0;
        self.left_out_bytes = 0;
    }

    /// An empty buffer of at most `records` records within `bytes`.
    #[cfg(test)]
    pub(crate) const fn with_budget(records: usize, bytes: usize) -> Pending {
        Pending {
            records: VecDeque::new(),
            bytes: 0,
            own: Some((records, bytes)),
            left_out: 0,
            left_out_bytes: 0,
        }
    }

    /// The most it keeps: records, bytes.
    fn most(&self) -> (usize, usize) {
        self.own.unwrap_or_else(in_force)
    }

    /// The most it keeps, as its note says it.
    pub(crate) fn limit(&self) -> Limit {
        let (records, bytes) = self.most();
        Limit::Records(records, bytes)
    }

    /// Adds a record, cut to the budget's bytes if it is larger; the oldest
    /// ones make room for it.
    pub(crate) fn push(&mut self, mut record: PendingRecord) {
        record.fit(self.most().1);
        self.bytes += record.size();
        self.records.push_back(record);
        self.trim();
    }

    /// Whether a record of `size` bytes ([`PendingRecord::size`]) fits
    /// without leaving one out (an empty buffer takes any record: one too
    /// large is cut).
    pub(crate) fn has_room(&self, size: usize) -> bool {
        let (most, cap) = self.most();
        self.records.is_empty() || (self.records.len() < most && self.bytes + size <= cap)
    }

    /// Leaves out the oldest records, and counts them, until the rest fit
    /// the budget (the newest one stays, whatever its size).
    fn trim(&mut self) {
        let (most, cap) = self.most();
        while (self.records.len() > most || self.bytes > cap) && self.records.len() > 1 {
            let old = self.records.pop_front().expect("not empty");
            self.bytes -= old.size();
            self.left_out += 1;
            self.left_out_bytes += old.size() as u64;
            super::dropped::count(1);
        }
    }

    /// The records waiting, oldest first.
    pub(crate) fn records(&self) -> impl Iterator<Item = &PendingRecord> {
        self.records.iter()
    }

    /// Takes everything out.
    pub(crate) fn take(&mut self) -> Batch {
        super::patience::took();
        self.bytes = 0;
        Batch {
            records: self.records.drain(..).collect(),
            left_out: std::mem::take(&mut self.left_out),
            left_out_bytes: std::mem::take(&mut self.left_out_bytes),
        }
    }

    /// Takes the oldest `n` records out, with the count of those left out
    /// before them.
    pub(crate) fn take_oldest(&mut self, n: usize) -> Batch {
        super::patience::took();
        if n >= self.records.len() {
            return self.take();
        }
        let records: Vec<PendingRecord> = self.records.drain(..n).collect();
        self.bytes -= records.iter().map(PendingRecord::size).sum::<usize>();
        Batch {
            records,
            left_out: std::mem::take(&mut self.left_out),
            left_out_bytes: std::mem::take(&mut self.left_out_bytes),
        }
    }

    /// Whether nothing waits: no record, no count of records left out.
    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty() && self.left_out == 0
    }

    /// Puts back what could not be delivered, before what came since.
    pub(crate) fn put_back(&mut self, batch: Batch) {
        self.left_out += batch.left_out;
        self.left_out_bytes += batch.left_out_bytes;
        for record in batch.records.into_iter().rev() {
            self.bytes += record.size();
            self.records.push_front(record);
        }
        self.trim();
    }
}

/// The process-wide queue of records logged for `logging` outside any call,
/// which pylogsink's Python thread and the next call's return deliver.
///
/// Whoever delivers it waits in [`queue::wait`]; a record pushed or put back
/// wakes it, without blocking the thread that logs.
///
/// A Fatal line writes what waits here to fd 2 as text, since an abort
/// follows. So that no record is lost between a delivery that took it and
/// the abort, a Fatal line stops new deliveries and waits (at most the
/// stall wait) for the one under way, and a [`queue::Delivery`] holds its records
/// until they have been handed over.
pub(crate) mod queue {
    use super::{Batch, Pending, PendingRecord};
    use crate::record::{lock, lock_at_crash, HeldForFork};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::sync::{Condvar, Mutex, MutexGuard};
    use std::time::{Duration, Instant};

    static QUEUE: Mutex<Pending> = Mutex::new(Pending::new());
    static WAITING: AtomicBool = AtomicBool::new(false);
    /// Records wait in a call in progress, for a live delivery.
    static IN_CALLS: AtomicBool = AtomicBool::new(false);
    /// Deliveries under way.
    static DELIVERING: AtomicUsize = AtomicUsize::new(0);
    /// Fatal lines being written.
    static FATAL: AtomicUsize = AtomicUsize::new(0);
    /// Between two cells of a Jupyter kernel: what waits outside any call
    /// stays for the next cell ([`hold`]).
    static HELD: AtomicBool = AtomicBool::new(false);

    /// Wakes whoever waits in [`wait`].
    static WAKE: Condvar = Condvar::new();
    static WAKE_LOCK: Mutex<()> = Mutex::new(());

    fn queue() -> MutexGuard<'static, Pending> {
        lock(&QUEUE)
    }

    /// Adds a record, and wakes whoever delivers if nothing waited: the
    /// records that follow, until it takes them, join without a wake-up.
    /// True for the first record since the last take.
    pub(crate) fn push(record: PendingRecord) -> bool {
        let size = record.size();
        let mut queue =
            crate::dest::patience::wait_for_room(queue(), &QUEUE, |q| q.has_room(size), notify);
        queue.push(record);
        drop(queue);
        let first = !WAITING.swap(true, SeqCst);
        if first {
            notify();
        }
        crate::dest::prompt::ask();
        first
    }

    /// Wakes the one who waits in [`wait`]. Taking the wait's lock first
    /// means the waiter is either before its check (and sees the flag just
    /// set) or inside the wait (and is woken): no wake is lost, so the
    /// waiter needs no timeout and an idle process never wakes it.
    fn notify() {
        drop(lock(&WAKE_LOCK));
        WAKE.notify_one();
    }

    /// Tells whoever delivers to look at what only Python can take: records
    /// or lines in a call in progress, lines logged outside any call for a
    /// replaced `sys.stderr`, Python levels that changed. Once until it
    /// looks ([`take_in_calls`]): the thread that logs pays one atomic
    /// swap, and a notification at most once per look.
    pub(crate) fn wake_for_calls() {
        if !IN_CALLS.swap(true, SeqCst) {
            notify();
        }
    }

    /// Holds what waits outside any call (records, and the lines for a
    /// replaced `sys.stderr`) from pylogsink's thread, or lets it go: a
    /// Jupyter kernel's front end drops what comes after a cell ended, so
    /// between two cells it waits for the next one.
    pub(crate) fn hold(held: bool) {
        HELD.store(held, SeqCst);
        if !held {
            notify();
        }
    }

    /// Whether what waits outside any call is held ([`hold`]).
    pub(crate) fn held() -> bool {
        HELD.load(SeqCst)
    }

    /// Whether a Jupyter kernel's cell hooks are set up (they call [`hold`]).
    static CELLS_HOOKED: AtomicBool = AtomicBool::new(false);

    /// The cell hooks are set up.
    pub(crate) fn set_cells_hooked() {
        CELLS_HOOKED.store(true, SeqCst);
    }

    /// Whether the cell hooks are set up.
    pub(crate) fn cells_hooked() -> bool {
        CELLS_HOOKED.load(SeqCst)
    }

    /// Whether [`wake_for_calls`] was called since the last look; clears it.
    pub(crate) fn take_in_calls() -> bool {
        IN_CALLS.swap(false, SeqCst)
    }

    /// What [`wait`] saw.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Woken {
        /// `stop` said so.
        Stop,
        /// Records wait in the queue.
        Queue,
        /// Something else waits for Python ([`wake_for_calls`]).
        Calls,
    }

    /// Waits until records wait (in the queue, not [`held`]), something
    /// else waits for Python ([`wake_for_calls`]), or `stop` says so. No
    /// timeout: every wake takes the wait's lock first (see `notify`), so
    /// none is lost.
    pub(crate) fn wait(stop: impl Fn() -> bool) -> Woken {
        let mut guard = lock(&WAKE_LOCK);
        loop {
            if stop() {
                return Woken::Stop;
            }
            if waiting() && !held() {
                return Woken::Queue;
            }
            if IN_CALLS.load(SeqCst) {
                return Woken::Calls;
            }
            guard = WAKE.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The queue's locks, held across a fork. The child starts with
    /// nothing waiting and no delivery under way: what waited is the
    /// parent's to deliver.
    pub(crate) fn hold_for_fork() -> Vec<HeldForFork> {
        let mut queue = queue();
        let wake = lock(&WAKE_LOCK);
        vec![Box::new(move |child| {
            if child {
                drop(queue.take());
                WAITING.store(false, SeqCst);
                IN_CALLS.store(false, SeqCst);
                DELIVERING.store(0, SeqCst);
                FATAL.store(0, SeqCst);
                // The child runs no cells: nothing waits for one.
                HELD.store(false, SeqCst);
            }
            drop(wake);
            drop(queue);
        })]
    }

    /// Wakes whoever waits in [`wait`], to look at `stop` again.
    pub(crate) fn wake() {
        drop(lock(&WAKE_LOCK));
        WAKE.notify_all();
    }

    /// Whether records wait.
    #[inline]
    pub(crate) fn waiting() -> bool {
        WAITING.load(SeqCst)
    }

    /// Puts back records that could not be delivered, before what came since.
    pub(crate) fn put_back(batch: Batch) {
        if !batch.is_empty() {
            queue().put_back(batch);
            if !WAITING.swap(true, SeqCst) {
                notify();
            }
        }
    }

    /// Hands the records that wait to `f`, from a signal handler (see
    /// [`lock_at_crash`]). Returns 1 if the lock stayed held, else 0.
    pub(crate) fn visit(f: &mut dyn FnMut(&mut Pending)) -> usize {
        match lock_at_crash(&QUEUE) {
            Some(mut queue) => {
                f(&mut queue);
                0
            }
            None => 1,
        }
    }

    /// Takes what waits, for whoever can no longer deliver it (the exit).
    pub(crate) fn take_now() -> Batch {
        if !WAITING.swap(false, SeqCst) {
            return Batch::default();
        }
        queue().take()
    }

    /// Records taken out to be handed to `logging`; a Fatal line waits for
    /// them until this is dropped.
    pub(crate) struct Delivery(pub Batch);

    impl Delivery {
        /// Takes what waits, unless a Fatal line is being written: then
        /// `None`, and the records stay for it.
        pub(crate) fn start() -> Option<Delivery> {
            DELIVERING.fetch_add(1, SeqCst);
            if FATAL.load(SeqCst) > 0 {
                DELIVERING.fetch_sub(1, SeqCst);
                return None;
            }
            Some(Delivery(take_now()))
        }
    }

    impl Drop for Delivery {
        fn drop(&mut self) {
            DELIVERING.fetch_sub(1, SeqCst);
        }
    }

    /// A Fatal line being written: no delivery starts until it is dropped.
    pub(crate) struct Fatal(());

    impl Fatal {
        /// Stops new deliveries and waits, at most `wait`, for those under
        /// way to finish.
        pub(crate) fn begin(wait: Duration) -> Fatal {
            FATAL.fetch_add(1, SeqCst);
            let deadline = Instant::now() + wait;
            while DELIVERING.load(SeqCst) > 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            Fatal(())
        }

        /// Takes what waits.
        pub(crate) fn take(&self) -> Batch {
            take_now()
        }
    }

    impl Drop for Fatal {
        fn drop(&mut self) {
            FATAL.fetch_sub(1, SeqCst);
        }
    }
}

/// Records taken out of their buffer and being handed to `logging`.
///
/// A delivery hands its records to Python one by one, and Python code runs
/// between them (a handler that writes to a network). A crash in another
/// thread meanwhile must still find the records not handed yet, so a
/// delivery registers its batch here, with how far it got, until it ends;
/// the crash handler writes the rest.
pub(crate) mod flight {
    use super::{Batch, PendingRecord};
    use crate::record::{lock, lock_at_crash, HeldForFork};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    /// One batch in flight, how many of its records were handed over, and
    /// how many a signal handler wrote for a process that may live on.
    pub(crate) struct Flight {
        batch: Batch,
        handed: AtomicUsize,
        written: AtomicUsize,
    }

    static FLIGHTS: Mutex<Vec<Arc<Flight>>> = Mutex::new(Vec::new());

    /// A batch in flight until this is dropped.
    pub(crate) struct InFlight(Arc<Flight>);

    /// Puts `batch` in flight.
    pub(crate) fn start(batch: Batch) -> InFlight {
        let flight = Arc::new(Flight {
            batch,
            handed: AtomicUsize::new(0),
            written: AtomicUsize::new(0),
        });
        lock(&FLIGHTS).push(Arc::clone(&flight));
        InFlight(flight)
    }

    impl InFlight {
        /// The batch.
        pub(crate) fn batch(&self) -> &Batch {
            &self.0.batch
        }

        /// The first `n` records were handed over (or went elsewhere).
        pub(crate) fn handed(&self, n: usize) {
            self.0.handed.store(n, Ordering::Release);
        }

        /// Whether record `n` was written by a signal handler, as the
        /// last words of a process that lived on: it is not handed over.
        pub(crate) fn written_at_crash(&self, n: usize) -> bool {
            n < self.0.written.load(Ordering::Acquire)
        }
    }

    impl Drop for InFlight {
        fn drop(&mut self) {
            let mut flights = lock(&FLIGHTS);
            let ours = flights.iter().position(|f| Arc::ptr_eq(f, &self.0));
            // Freed once the lock is let go.
            let _ours = ours.map(|i| flights.swap_remove(i));
            drop(flights);
        }
    }

    /// Hands the records not handed yet of each batch in flight to `f`,
    /// from a signal handler (see [`lock_at_crash`]): nothing is allocated
    /// or freed. With `forget` (a process that may live on), they are
    /// not handed over after. Returns 1 if the lock stayed held, else 0.
    pub(crate) fn visit(f: &mut dyn FnMut(&[PendingRecord]), forget: bool) -> usize {
        let Some(flights) = lock_at_crash(&FLIGHTS) else {
            return 1;
        };
        for flight in flights.iter() {
            let records = &flight.batch.records;
            let handed = flight.handed.load(Ordering::Acquire);
            let written = flight.written.load(Ordering::Acquire);
            f(&records[handed.max(written).min(records.len())..]);
            if forget {
                flight.written.store(records.len(), Ordering::Release);
            }
        }
        0
    }

    /// The lock, held across a fork. The child has no delivery under way:
    /// what was in flight is the parent's.
    pub(crate) fn hold_for_fork() -> HeldForFork {
        crate::record::lock::hold_for_fork_leaving_in_child(&FLIGHTS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn record(i: usize, size: usize) -> PendingRecord {
        let message = format!("{i:06} {}", "x".repeat(size));
        PendingRecord::new(
            &Record {
                level: Level::Info,
                target: "rt::loader",
                file: "src/loader.rs",
                line: 7,
                message: message.as_bytes(),
                fields: None,
            },
            UNIX_EPOCH + Duration::new(1_796_117_962, 5_000),
            Identity {
                thread: 1,
                name: "worker".into(),
                native_id: 11,
                python: false,
            },
        )
    }

    #[test]
    fn keeps_the_newest_within_the_cap_and_counts_the_rest() {
        let mut p = Pending::with_budget(usize::MAX, 10_000);
        for i in 0..1000 {
            p.push(record(i, 100));
        }
        let batch = p.take();
        let kept = batch.records.len() as u64;
        assert_eq!(kept + batch.left_out, 1000);
        assert!(kept > 0 && batch.left_out > 0);
        // The newest, in order.
        let first = 1000 - kept as usize;
        for (n, r) in batch.records.iter().enumerate() {
            assert!(r.message.starts_with(&format!("{:06}", first + n)));
        }
        assert!(batch
            .note()
            .unwrap()
            .starts_with(&format!("{} records", batch.left_out)));
        assert!(p.take().is_empty());
    }

    #[test]
    fn a_record_larger_than_the_budget_is_cut_with_a_note() {
        let mut p = Pending::with_budget(usize::MAX, 10_000);
        p.push(record(0, 100));
        p.push(record(1, 1_000_000));
        let batch = p.take();
        // The large one makes the older one leave, and is cut to fit.
        assert_eq!(batch.left_out, 1);
        let [cut] = &batch.records[..] else {
            panic!("{} records", batch.records.len())
        };
        assert!(cut.size() <= 10_000, "{}", cut.size());
        assert!(cut.message.starts_with("000001 xxx"));
        let kept = cut.message.find(" [pylogsink]").unwrap();
        let note = format!(
            " [pylogsink] cut: {} bytes left out, more than the budget of 10000 bytes",
            1_000_007 - kept
        );
        assert!(cut.message.ends_with(&note), "{}", &cut.message[kept..]);
        // A character is never split.
        let mut p = Pending::with_budget(usize::MAX, 1000);
        p.push(PendingRecord {
            message: "\u{e9}".repeat(5000),
            ..record(2, 0)
        });
        assert!(p.take().records[0].message.starts_with('\u{e9}'));
    }

    #[test]
    fn keeps_at_most_the_budget_in_records_whatever_their_bytes() {
        let mut p = Pending::with_budget(10, usize::MAX);
        for i in 0..25 {
            p.push(record(i, 10));
        }
        let batch = p.take();
        assert_eq!((batch.records.len(), batch.left_out), (10, 15));
        assert!(batch.records[0].message.starts_with("000015"));
        assert_eq!(
            p.limit().to_string(),
            format!("10 records or {} KiB", usize::MAX / 1024)
        );
    }

    #[test]
    fn the_default_budget_is_fifty_thousand_records_within_16_mib() {
        let default = budget::DEFAULT;
        assert_eq!((default.records, default.record_bytes), (50_000, 16 << 20));
        let note = left_out_note(3, "record", 300, Limit::Records(50_000, 16 << 20));
        assert_eq!(
            note,
            "3 records (300 bytes) left out here: more than 50000 records or 16 MiB waited at once"
        );
    }

    #[test]
    fn the_note_counts_bytes_as_the_budget_does() {
        let mut p = Pending::with_budget(usize::MAX, 10_000);
        let records: Vec<_> = (0..500).map(|i| record(i, 50 + i % 7)).collect();
        for r in records.clone() {
            p.push(r);
        }
        let batch = p.take();
        let left_out = batch.left_out as usize;
        let expected: usize = records[..left_out].iter().map(PendingRecord::size).sum();
        assert_eq!(batch.left_out_bytes as usize, expected);
        let kept: usize = batch.records.iter().map(PendingRecord::size).sum();
        assert!(
            kept <= 10_000
                && kept + expected == records.iter().map(PendingRecord::size).sum::<usize>()
        );
    }

    #[test]
    fn put_back_goes_before_what_came_since() {
        let mut p = Pending::with_budget(usize::MAX, 1 << 20);
        p.push(record(0, 1));
        let batch = p.take();
        p.push(record(1, 1));
        p.put_back(batch);
        let order: Vec<_> = p
            .take()
            .records
            .iter()
            .map(|r| r.message[..6].to_owned())
            .collect();
        assert_eq!(order, ["000000", "000001"]);
    }

    #[test]
    fn messages_are_escaped_and_text_matches_the_stderr_format() {
        let r = PendingRecord::new(
            &Record {
                level: Level::Warn,
                target: "rt",
                file: "a/b.rs",
                line: 3,
                message: b"bad \x1b[2J\xff\nnext",
                fields: None,
            },
            UNIX_EPOCH + Duration::new(1_796_117_962, 5_000),
            Identity {
                thread: 1,
                name: "t".into(),
                native_id: 1,
                python: false,
            },
        );
        assert_eq!(r.message, "bad \\x1b[2J\\xff\n    next");
        let mut text = Vec::new();
        r.to_text(&mut text);
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "[2026-12-01T09:39:22.000005Z WARN  rt b.rs:3] bad \\x1b[2J\\xff\n    next\n"
        );
    }

    #[test]
    fn a_batch_in_flight_shows_what_was_not_handed_until_it_lands() {
        let messages = |flights: &mut Vec<Vec<String>>| {
            flights.clear();
            flight::visit(
                &mut |records| flights.push(records.iter().map(|r| r.message.clone()).collect()),
                false,
            )
        };
        let ours = |flights: &Vec<Vec<String>>| {
            flights
                .iter()
                .find(|f| f.iter().any(|m| m.starts_with("in flight")))
                .cloned()
        };
        let batch = Batch {
            records: (0..5)
                .map(|i| PendingRecord {
                    message: format!("in flight {i}"),
                    ..record(i, 10)
                })
                .collect(),
            ..Batch::default()
        };
        let mut seen = Vec::new();
        let in_flight = flight::start(batch);
        assert_eq!(messages(&mut seen), 0);
        assert_eq!(ours(&seen).map(|f| f.len()), Some(5));
        in_flight.handed(2);
        messages(&mut seen);
        assert_eq!(
            ours(&seen),
            Some(vec![
                "in flight 2".into(),
                "in flight 3".into(),
                "in flight 4".into()
            ])
        );
        drop(in_flight);
        messages(&mut seen);
        assert_eq!(ours(&seen), None, "landed: nothing left to write");
    }

    #[test]
    fn records_a_handler_wrote_for_a_process_that_lives_on_are_not_handed_over() {
        let batch = Batch {
            records: (0..3)
                .map(|i| PendingRecord {
                    message: format!("written at a raised signal {i}"),
                    ..record(i, 10)
                })
                .collect(),
            ..Batch::default()
        };
        let in_flight = flight::start(batch);
        in_flight.handed(1);
        let mut written = Vec::new();
        let visit = |written: &mut Vec<String>, forget| {
            flight::visit(
                &mut |records| {
                    let ours = records
                        .iter()
                        .filter(|r| r.message.starts_with("written at"));
                    written.extend(ours.map(|r| r.message.clone()))
                },
                forget,
            )
        };
        visit(&mut written, true);
        assert_eq!(
            written,
            [
                "written at a raised signal 1",
                "written at a raised signal 2"
            ]
        );
        assert!(in_flight.written_at_crash(2) && !in_flight.written_at_crash(3));
        written.clear();
        visit(&mut written, false);
        assert!(written.is_empty(), "written twice: {written:?}");
    }

    #[test]
    fn forgetting_at_a_crash_empties_the_buffer_and_its_note() {
        let mut pending = Pending::with_budget(2, 1 << 20);
        for i in 0..3 {
            pending.push(record(i, 10));
        }
        assert_eq!(pending.left_out, 1);
        pending.forget_at_crash();
        assert!(pending.is_empty() && pending.left_out == 0);
        pending.push(record(3, 10));
        assert_eq!(pending.records().count(), 1);
    }
}
